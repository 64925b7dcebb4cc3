"""The eigendecomposition of a general (non-symmetric) square matrix with PyTorch's names:
``torch.linalg.eig`` (``(eigenvalues, eigenvectors)``) and ``torch.linalg.eigvals``. Real
float32 / float64 input (any leading batch dims); the results are complex (complex64 /
complex128) whatever the input, as in torch.

Forward: LAPACK's ``geev`` (``numpy.linalg.eig``, batched; on the host for a CuPy array, as
CuPy has no general eigensolver). Each eigenvector has unit norm, as LAPACK and torch
return it; its phase is LAPACK's (a gauge: functions of ``|V|`` or of ``V diag(L) V^-1``
agree between libraries).

Backward (torch's ``linalg_eig_backward``, FunctionsManual.cpp; ``^H`` the conjugate
transpose, ``E_ij = conj(L_j - L_i)`` off the diagonal):

* from the eigenvalues: ``gA = V^-H diag(gL) V^H``;
* from the eigenvectors: ``W = V^H gV - V^H V diag(Re(diag(V^H gV)))`` (the part a change of
  the vectors' norms cannot explain), ``gA = V^-H (W / E with a zero diagonal) V^H``. The loss
  must not depend on the vectors' phases: torch's check (``Im(diag(V^H gV)) ~ 0``) is kept.

A real input gets the real part. The two outputs are two nodes over one ``geev`` (their
gradient terms add; written when a node's complex outputs had to be its only output to be
differentiable, which multi-output nodes no longer need). First-order only: a second derivative raises
``DoubleBackwardNotImplemented``.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module
from . import _host_lapack as hl
from ._util import as_tensor_arg
from .cholesky import LinAlgError
from .decompositions import check_float_matrix
from .reduce import return_types

__all__ = ["linalg_eig", "linalg_eigvals"]

_COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def _mH(a):
    return a.swapaxes(-1, -2).conj()


def _geev(a):
    """``(L, V)`` of a real host array, complex of the matching precision."""
    try:
        w, v = np.linalg.eig(a)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"linalg.eig: the algorithm failed to converge ({e}); check the input for "
                          "NaN/inf or a badly scaled matrix") from None
    cdt = _COMPLEX_OF[a.dtype]
    return w.astype(cdt), v.astype(cdt)


class LinalgEig(Function):
    """One output of a precomputed ``geev`` (``part`` 0: eigenvalues, 1: eigenvectors)."""

    save_inputs = ()

    def forward(self, a, w=None, v=None, part=0):
        self.w, self.v, self.part, self.real = w, v, part, a.dtype.kind == "f"
        return w if part == 0 else v

    def backward(self, g):
        xp = get_array_module(g)
        w, v = self.w, self.v
        vh = _mH(v)
        if self.part == 0:
            ga = xp.linalg.solve(vh, g[..., :, None] * vh)
        else:
            vhgv = vh @ g
            diag = xp.diagonal(vhgv, 0, -2, -1)
            if not xp.allclose(diag.imag, 0, rtol=1e-2, atol=1e-2):
                raise RuntimeError(
                    "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                    "multiplication by e^{i phi}. The specified loss function depends on this phase, "
                    "so it is ill-defined (use a function of |V|, or of V diag(L) V^-1)")
            vhgv = vhgv - vh @ (v * diag.real[..., None, :])
            wc = w.conj()
            e = wc[..., None, :] - wc[..., :, None]
            n = w.shape[-1]
            eye = xp.eye(n, dtype=bool)
            ret = xp.where(eye, 0, vhgv / xp.where(eye, 1, e))
            ga = xp.linalg.solve(vh, ret @ vh)
        return ga.real.copy() if self.real else ga


def _eig(A, op: str, vectors: bool):
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, op, square=True)
    w, v = _geev(hl.host(A.array))
    w, v = hl.like(w, A.array), hl.like(v, A.array)
    vals = LinalgEig.apply(A, w=w, v=v, part=0)
    return (vals, LinalgEig.apply(A, w=w, v=v, part=1)) if vectors else vals


@register("linalg_eig")
def linalg_eig(A):
    """``torch.linalg.eig``: ``(eigenvalues, eigenvectors)`` (complex) with ``A V = V diag(L)``."""
    vals, vecs = _eig(A, "linalg.eig", vectors=True)
    return return_types.linalg_eig(vals, vecs)


@register("linalg_eigvals")
def linalg_eigvals(A) -> Tensor:
    """``torch.linalg.eigvals``: the (complex) eigenvalues of each square matrix."""
    return _eig(A, "linalg.eigvals", vectors=False)
