"""Householder reflectors with PyTorch's names: ``torch.geqrf`` (QR in LAPACK's compact form),
``torch.linalg.householder_product`` (``torch.orgqr``: the ``Q`` those reflectors make) and
``torch.ormqr`` (``Q`` or ``Q^T`` applied to a matrix without forming it); ``Tensor.geqrf``,
``Tensor.orgqr``, ``Tensor.ormqr``. Real float32 / float64, any leading batch dims.

The reflectors: column ``i`` of ``A`` below the diagonal is ``v_i`` (with an implicit 1 at row
``i`` and zeros above), ``H_i = I - tau_i v_i v_i^T`` and ``Q = H_1 H_2 ... H_k`` (m, m),
``k = tau.shape[-1]``.

* ``geqrf``: LAPACK's ``geqrf`` through SciPy (``_host_lapack.py``), one matrix at a time;
  not differentiable (torch's ``GeqrfBackward0``: NotImplementedError "the derivative for
  'geqrf' is not implemented.", ``not_differentiable.py``).
* ``ormqr(A, tau, C, left, transpose)``: the reflectors applied one at a time, each a rank-1
  update ``C - tau_i v_i (v_i^T C)`` (``left``) or ``C - (C v_i) tau_i v_i^T`` (right), in the
  order the product asks (``Q C`` applies ``H_k`` first, ``Q^T C`` ``H_1`` first). O(k m n)
  work, no m x m matrix.
* ``householder_product(A, tau)``: the first ``n`` columns of ``Q``, i.e. ``ormqr`` of the
  (m, n) identity.

Both are compositions of differentiable ops (``tril``, slicing, ``matmul``), so their
gradients w.r.t. ``A``, ``tau`` (and ``C``) are the exact derivatives torch's formulas give,
at any order.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module
from . import _host_lapack as hl
from ._util import as_tensor_arg
from .decompositions import check_float_matrix
from .not_differentiable import NotDifferentiable
from .reduce import return_types

__all__ = ["linalg_householder_product", "orgqr", "ormqr", "geqrf"]


def _geqrf(a):
    """``(QR, tau)`` of each matrix of ``a`` (any device) by LAPACK's ``geqrf``."""
    flat, batch = hl.batched(np.ascontiguousarray(hl.host(a)))
    m, n = a.shape[-2:]
    qr = np.empty_like(flat)
    tau = np.empty((flat.shape[0], min(m, n)), dtype=flat.dtype)
    if min(m, n):
        routine = hl.lapack_routine("geqrf", flat)
        for b in range(flat.shape[0]):
            qr[b], tau[b] = routine(flat[b])[:2]
    else:
        qr[...] = flat
    return hl.like(qr.reshape(a.shape), a), hl.like(tau.reshape(batch + (min(m, n),)), a)


@register("geqrf")
def geqrf(input):
    """``torch.geqrf``: ``(a, tau)``: ``R`` on and above ``a``'s diagonal, the Householder
    vectors below it, their scalars in ``tau`` (LAPACK's ``geqrf``; see ``orgqr``)."""
    A = as_tensor_arg(input)
    check_float_matrix(A, "torch.geqrf")
    qr, tau = NotDifferentiable.apply(A, forward_fn=_geqrf, name="geqrf",
                                      instead="torch.linalg.qr", node="GeqrfBackward0")
    return return_types.geqrf(qr, tau)


def _check_reflectors(A: Tensor, tau: Tensor, op: str) -> None:
    check_float_matrix(A, op)
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.ndim} and input.ndim is equal to {A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], "
                           f"but got {tuple(tau.shape[:-1])} and {tuple(A.shape[:-2])}")
    if tau.shape[-1] > A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1] "
                           f"(got {A.shape[-1]} and {tau.shape[-1]}): there is one reflector per "
                           "column at most")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype} does not match input dtype {A.dtype}; "
                           "convert one of them")


def _apply_reflectors(A: Tensor, tau: Tensor, C: Tensor, left: bool, transpose: bool) -> Tensor:
    """``Q C``, ``Q^T C``, ``C Q`` or ``C Q^T`` for ``Q = H_1 ... H_k`` (module docstring)."""
    m = A.shape[-2]
    k = tau.shape[-1]
    xp = get_array_module(A.array)
    vs = A[..., :, :k].tril(-1) + _wrap(xp.eye(m, k, dtype=A.array.dtype))  # (..., m, k)
    # Q C = H_1 (H_2 (... H_k C)): the last reflector first; Q^T C: the first; right: reversed
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    for i in order:
        v = vs[..., :, i:i + 1]  # (..., m, 1)
        t = tau[..., i:i + 1].unsqueeze(-1)  # (..., 1, 1)
        C = C - (v * t) @ (v.mT @ C) if left else C - (C @ v) @ (t * v.mT)
    return C


@register("linalg_householder_product")
def linalg_householder_product(A, tau) -> Tensor:
    """``torch.linalg.householder_product``: the first ``n`` columns of ``H_1 ... H_k``
    (``A`` (m, n) with ``m >= n``, ``tau`` (k,) with ``k <= n``)."""
    A, tau = as_tensor_arg(A, "A"), as_tensor_arg(tau, "tau")
    op = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions, got shape {tuple(A.shape)}")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1] "
                           f"(got a {A.shape[-2]} by {A.shape[-1]} input): Q has orthonormal columns")
    _check_reflectors(A, tau, op)
    m, n = A.shape[-2:]
    xp = get_array_module(A.array)
    eye = _wrap(xp.broadcast_to(xp.eye(m, n, dtype=A.array.dtype), A.shape).copy())
    return _apply_reflectors(A, tau, eye, left=True, transpose=False)


@register("orgqr")
def orgqr(input, tau) -> Tensor:
    """``torch.orgqr``: an alias of ``torch.linalg.householder_product``."""
    return linalg_householder_product(input, tau)


@register("ormqr")
def ormqr(input, tau, other, left: bool = True, transpose: bool = False) -> Tensor:
    """``torch.ormqr``: ``Q C`` (``left=False``: ``C Q``; ``transpose=True``: with ``Q^T``) for
    the ``Q`` (m, m) of the reflectors in ``input`` / ``tau`` (``geqrf``'s form), ``C = other``."""
    A, tau, C = as_tensor_arg(input), as_tensor_arg(tau, "tau"), as_tensor_arg(other, "other")
    _check_reflectors(A, tau, "torch.ormqr")
    if C.ndim < 2:
        raise RuntimeError(f"torch.ormqr: other must have at least 2 dimensions, got shape {tuple(C.shape)}")
    side = C.shape[-2] if left else C.shape[-1]
    if side != A.shape[-2]:
        dim = -2 if left else -1
        raise RuntimeError(f"torch.ormqr: other.shape[{dim}] must be equal to input.shape[-2] for "
                           f"left={left} (got {side} and {A.shape[-2]})")
    if tau.shape[-1] != min(side, A.shape[-1]):
        dim = -2 if left else -1
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{dim}], "
                           f"input.shape[-1]) (got {tau.shape[-1]}, {side} and {A.shape[-1]}): pass "
                           "all the reflectors geqrf returned")
    return _apply_reflectors(A, tau, C, left=bool(left), transpose=bool(transpose))
