"""Matrix functions with PyTorch's names: ``inverse``, ``det``, ``slogdet``, ``logdet``,
``matrix_power``, ``solve`` (``torch.linalg.solve``), ``cdist``, ``addbmm``,
``chain_matmul`` (``cross``, ``kron``, ``tensordot``, ``addmv``, ``addr`` are in
``tensor_products.py``); ``linalg.py`` gathers them
under ``torch.linalg``'s names. Matrices may carry leading batch dims (NumPy's
``linalg`` broadcasts over them; CuPy's too).

Gradients (``A^-T`` is the inverse transposed over the last two dims):

* ``inverse``: ``-A^-T g A^-T``; ``det``: ``g det(A) A^-T`` (invertible ``A``: PyTorch also
  handles singular matrices through an SVD, which is not done here); ``slogdet``: the
  log-abs-det part gets ``g A^-T``, the sign none; ``logdet``: ``g A^-T`` (NaN for a
  negative determinant, as PyTorch).
* ``solve(A, B)``: ``X = A^-1 B``; ``gB = solve(A^T, g)``, ``gA = -gB X^T`` (a vector ``B``
  is a column).
* ``matrix_power``, ``cdist``, ``addbmm`` are
  compositions of ``matmul`` / ``einsum`` / ``vector_norm`` / products, so their gradients
  are those ops'.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module, linalg_errors_raised
from ..backend.dtypes import _SCALAR_TYPE_NAMES
from . import _grad_graph as _gg
from ._util import unbroadcast

__all__ = ["inverse", "det", "slogdet", "logdet", "matrix_power", "cdist", "addbmm", "chain_matmul"]


def _ops():
    from .. import ops

    return ops


def _mT(a):
    return get_array_module(a).swapaxes(a, -1, -2)


def _square(input, op: str, complex_ok: bool = False) -> None:
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are "
                           f"{tuple(input.shape[-2:]) if input.ndim >= 2 else tuple(input.shape)} matrices")
    if not (input.dtype.is_floating_point or (complex_ok and input.dtype.is_complex)):
        raise RuntimeError(f"linalg.{op}: Expected a floating point tensor as input. Got {input.dtype}")


def _singular_checked(fn, op: str, *arrays):
    """``fn(*arrays)``, a singular matrix raising ``torch.linalg.LinAlgError`` (a
    ``RuntimeError``, as torch's) on NumPy and on CuPy (which says nothing by default)."""
    try:
        with linalg_errors_raised():
            return fn(*arrays)
    except np.linalg.LinAlgError as e:
        from .cholesky import LinAlgError

        what = "inversion" if op == "linalg.inv" else "solver"
        raise LinAlgError(f"{op}: the {what} could not be completed because the input matrix is "
                          f"singular ({e}); check the matrix or regularise it (add eps * I)") from None


class Inverse(Function):
    save_inputs = ()
    save_output = True

    def forward(self, a):
        self.inv = _singular_checked(get_array_module(a).linalg.inv, "linalg.inv", a)
        return self.inv

    def backward(self, g):
        it = _mT(self.inv)
        return -(it @ g @ it)

    def backward_graph(self, g):
        it = self.saved_output(0, self.inv).mT
        return -(it @ g @ it)


class Det(Function):
    save_inputs = (0,)
    save_output = True

    def forward(self, a):
        self.a = a
        self.det = get_array_module(a).linalg.det(a)
        return self.det

    def backward(self, g):
        xp = get_array_module(g)
        return (g * self.det)[..., None, None] * _mT(xp.linalg.inv(self.a))

    def backward_graph(self, g):
        d = self.saved_output(0, self.det)
        return (g * d).unsqueeze(-1).unsqueeze(-1) * Inverse.apply(self.saved_input(0, self.a)).mT


class SlogDet(Function):
    save_inputs = (0,)

    def forward(self, a):
        self.a = a
        sign, logabs = get_array_module(a).linalg.slogdet(a)
        return sign.astype(a.dtype), logabs.astype(a.dtype)

    def backward(self, g_sign, g_log):
        xp = get_array_module(g_log)
        return g_log[..., None, None] * _mT(xp.linalg.inv(self.a))

    def backward_graph(self, g_sign, g_log):  # the sign is piecewise constant
        return g_log.unsqueeze(-1).unsqueeze(-1) * Inverse.apply(self.saved_input(0, self.a)).mT


@register("inverse", "linalg_inv")
def inverse(input: Tensor) -> Tensor:
    """The inverse of each square matrix (gradient in the module docstring)."""
    _square(input, "inv")
    return Inverse.apply(input)


@register("det", "linalg_det")
def det(input: Tensor) -> Tensor:
    """The determinant of each square matrix."""
    _square(input, "det")
    return Det.apply(input)


@register("slogdet", "linalg_slogdet")
def slogdet(input: Tensor):
    """``(sign, log|det|)`` of each square matrix."""
    _square(input, "slogdet")
    from .reduce import return_types

    sign, logabs = SlogDet.apply(input)
    return return_types.slogdet(sign, logabs)


@register("logdet")
def logdet(input: Tensor) -> Tensor:
    """``log(det(A))``: NaN where the determinant is negative, as PyTorch."""
    sign, logabs = slogdet(input)
    ops = _ops()
    return ops.where(sign < 0, float("nan"), ops.where(sign == 0, float("-inf"), logabs))


@register("matrix_power", "linalg_matrix_power")
def matrix_power(input: Tensor, n: int) -> Tensor:
    """``A^n`` by repeated squaring (``n < 0``: of the inverse; ``n = 0``: the identity)."""
    n = int(n)
    _square(input, "matrix_power", complex_ok=n >= 0)  # products only: complex gradients hold
    ops = _ops()
    if n == 0:
        eye = ops.eye(input.shape[-1], dtype=input.dtype, device=input.device)
        return eye.expand(*input.shape) * 1
    base = inverse(input) if n < 0 else input
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else ops.matmul(result, base)
        n >>= 1
        if n:
            base = ops.matmul(base, base)
    return result


class Solve(Function):
    save_inputs = (0,)
    save_output = True

    def forward(self, a, b, vector=False):
        xp = get_array_module(a)
        self.a, self.vector = a, vector
        bb = b[..., None] if vector else b
        self.x = _singular_checked(xp.linalg.solve, "linalg.solve", a, bb)
        return self.x[..., 0] if vector else self.x

    def backward(self, g):
        xp = get_array_module(g)
        gg = g[..., None] if self.vector else g
        gb = xp.linalg.solve(_mT(self.a), gg)
        ga = -(gb @ _mT(self.x)) if self.needs_input_grad[0] else None
        if ga is not None:
            ga = unbroadcast(ga, self.a.shape)
        return ga, (gb[..., 0] if self.vector else gb)

    def backward_graph(self, g):
        a_t = self.saved_input(0, self.a)
        x = self.saved_output(0, self.x[..., 0] if self.vector else self.x)
        if self.vector:
            g, x = g.unsqueeze(-1), x.unsqueeze(-1)
        gb = Solve.apply(a_t.mT, g)  # A^-T g
        ga = _gg.sum_to(-(gb @ x.mT), self.a.shape) if self.needs_input_grad[0] else None
        return ga, (gb.squeeze(-1) if self.vector else gb)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``torch.linalg.solve``: ``X`` with ``A X = B`` (``left=False``: ``X A = B``)."""
    _square(A, "solve")
    if not left:
        return solve(A.mT, B.mT).mT
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    return Solve.apply(A, B, vector=vector)


# ---------------------------------------------------------------------------- products
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


@register("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode="use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """``(.., P, M) x (.., R, M) -> (.., P, R)`` ``p``-norm distances between the rows.

    Euclidean distances (``p=2``) take PyTorch's matrix-product form when ``compute_mode``
    says so (by default when P or R exceeds 25, as torch): ``sqrt(max(|a|^2 + |b|^2 - 2 a.b,
    1e-30))`` from one product of ``[-2a, |a|^2, 1]`` and ``[b, 1, |b|^2]`` (torch's
    ``_euclidean_dist``): a GEMM instead of the (P, R, M) difference tensor, and torch's values.
    Otherwise (other ``p``, small inputs, ``donot_use_mm_for_euclid_dist``) the norm of the
    pairwise differences."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):  # torch's check (complex would pass on)
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_SCALAR_TYPE_NAMES.get(x.dtype.name, x.dtype.name)}")
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"cdist only supports at least 2D tensors with the same number of columns, got "
                           f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
            compute_mode == "use_mm_for_euclid_dist_if_necessary" and (x1.shape[-2] > 25 or x2.shape[-2] > 25))):
        return _euclidean_dist(x1, x2)
    return _ops().vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    """torch's ``_euclidean_dist`` (see ``cdist``), with its operations, in its order."""
    ops = _ops()
    x1_norm = x1.pow(2).sum(-1, keepdim=True)  # (.., P, 1)
    x2_norm = x2.pow(2).sum(-1, keepdim=True)  # (.., R, 1)
    x1_ = ops.cat([x1.mul(-2), x1_norm, ops.ones_like(x1_norm)], -1)  # (.., P, M + 2)
    x2_ = ops.cat([x2, ops.ones_like(x2_norm), x2_norm], -1)  # (.., R, M + 2)
    return x1_.matmul(x2_.mT).clamp_min(1e-30).sqrt()  # (.., P, R)


def _scaled_add(input, prod, beta, alpha):
    from .matmul import _scaled_add as sa

    return sa(input, prod, beta, alpha)


@register("addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    return _scaled_add(input, _ops().bmm(batch1, batch2).sum(0), beta, alpha)


@register("chain_matmul")
def chain_matmul(*matrices) -> Tensor:
    """``matrices[0] @ matrices[1] @ ...`` (PyTorch's deprecated ``linalg.multi_dot``)."""
    if len(matrices) == 1 and isinstance(matrices[0], list | tuple):
        matrices = tuple(matrices[0])
    out = matrices[0]
    for m in matrices[1:]:
        out = _ops().mm(out, m)
    return out
