"""Linear algebra built on the decompositions (``decompositions.py``) with PyTorch's names:
``linalg.pinv`` (``torch.pinverse``), ``linalg.lstsq``, ``linalg.matrix_rank``,
``linalg.matrix_exp`` (``torch.matrix_exp``), ``linalg.cond``, ``linalg.cholesky_ex``.

* ``pinv``: ``V diag(1/S) U^T`` over the singular values above ``max(atol, rtol * S_max)``
  (torch's default: ``rtol = eps * max(m, n)`` when neither is given; ``hermitian=True``
  uses ``eigh``, dividing by the eigenvalues kept by absolute value). Backward: torch's
  ``pinv_backward`` (exact where the rank is locally constant), written on raw arrays.
* ``lstsq(A, B)``: ``solution = pinv(A) B`` (the minimum-norm least-squares solution that
  LAPACK's gelsy/gelsd/gelss return for every rank), so its gradient is torch's (torch's
  ``linalg_lstsq`` backward goes through ``pinv`` the same way). ``residuals``: the squared
  column norms of ``A X - B`` when ``m > n``, every matrix has full rank and the driver is not
  'gelsy' (torch's rule), else empty; ``rank`` (not for 'gels') and ``singular_values``
  ('gelsd' / 'gelss') as torch fills them. ``driver`` defaults to torch's CPU 'gelsy'.
* ``matrix_rank``: the count of singular values above ``max(atol, rtol * S_max)``.
* ``matrix_exp``: scaling and squaring: ``exp(A) = exp(A / 2^s)^(2^s)`` with ``s`` chosen so
  that ``|A / 2^s|_1 <= 1/2`` (over the whole batch), the inner exponential a degree-18
  Taylor polynomial (truncation below ``2^-18 / 19! `` relative, under float64's epsilon).
  Only matmuls: the same code runs on CuPy, which has no ``expm``. Backward: torch's,
  ``gA = exp([[A^T, G], [0, A^T]])[:n, n:]`` (the Fréchet derivative at ``A^T`` applied to
  ``G``, read from the exponential of a block matrix).
* ``cond(A, p)``: ``p`` None/2/-2: ``S_max / S_min`` (``S_min / S_max``) from ``svdvals``;
  other norms: ``norm(A, p) * norm(inv(A), p)``; gradients are those ops'.
* ``cholesky_ex``: ``(L, info)``; ``info`` is 0, or the order of the first leading minor that
  is not positive-definite (``L`` then holds NaN), raising instead when ``check_errors``.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module, linalg_errors_raised
from . import _grad_graph as _gg
from ._util import as_tensor_arg
from .cholesky import LinAlgError, _first_bad_minor, linalg_cholesky, linalg_solve_triangular
from .decompositions import _lapack, check_float_matrix, linalg_svdvals
from .reduce import return_types

__all__ = ["linalg_pinv", "pinverse", "linalg_lstsq", "linalg_matrix_rank", "linalg_matrix_exp",
           "matrix_exp", "linalg_cond", "linalg_cholesky_ex", "nuclear_norm", "frobenius_norm",
           "triangular_solve"]


def _mT(a):
    return a.swapaxes(-1, -2)


def _tolerances(xp, dtype, m: int, n: int, atol, rtol):
    """torch's (atol, rtol) defaults: rtol = eps * max(m, n) when neither is given, 0 when only
    atol is."""
    if rtol is None:
        rtol = np.finfo(dtype).eps * max(m, n) if atol is None else 0.0
    return (0.0 if atol is None else atol), rtol


def _as_array(x, like):
    """A tolerance (number or tensor) as an array broadcastable against ``like``'s batch."""
    xp = get_array_module(like)
    a = x.array if isinstance(x, Tensor) else x
    return xp.asarray(a, dtype=like.dtype)


# ----------------------------------------------------------------------------- pinv
def _pinv_array(xp, a, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    atol, rtol = _tolerances(xp, a.dtype, m, n, atol, rtol)
    atol, rtol = _as_array(atol, a), _as_array(rtol, a)
    if hermitian:
        w, v = _lapack(lambda: xp.linalg.eigh(a), "linalg.pinv")
        cut = xp.maximum(atol, rtol * xp.abs(w).max(-1))[..., None]
        keep = xp.abs(w) > cut
        inv = xp.where(keep, 1 / xp.where(keep, w, 1), 0)
        return (v * inv[..., None, :]) @ _mT(v)
    u, s, vh = _lapack(lambda: xp.linalg.svd(a, full_matrices=False), "linalg.pinv")
    smax = s[..., :1] if s.shape[-1] else s
    cut = xp.maximum(atol[..., None] if atol.ndim else atol, rtol[..., None] * smax if rtol.ndim else rtol * smax)
    keep = s > cut
    inv = xp.where(keep, 1 / xp.where(keep, s, 1), 0)
    return (_mT(vh) * inv[..., None, :]) @ _mT(u)


class Pinv(Function):
    save_inputs = (0,)
    save_output = True

    def forward(self, a, atol=None, rtol=None, hermitian=False):
        xp = get_array_module(a)
        self.a = a
        self.p = _pinv_array(xp, a, atol, rtol, hermitian).astype(a.dtype, copy=False)
        return self.p

    def backward(self, g):
        a, p = self.a, self.p
        m, n = a.shape[-2:]
        ph, gh = _mT(p), _mT(g)
        if m <= n:
            k = gh @ p
            kph = k @ ph
            ga = -_mT(p @ k) + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
        else:
            k = p @ gh
            phk = ph @ k
            ga = -_mT(k @ p) + (gh - a @ k) @ p @ ph + phk - phk @ p @ a
        return ga.astype(a.dtype, copy=False)

    def backward_graph(self, g):  # ``backward``'s formula on Tensors (matmuls only)
        a, p = self.saved_input(0, self.a), self.saved_output(0, self.p)
        m, n = a.shape[-2:]
        ph, gh = p.mT, g.mT
        if m <= n:
            k = gh @ p
            kph = k @ ph
            return -(p @ k).mT + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
        k = p @ gh
        phk = ph @ k
        return -(k @ p).mT + (gh - a @ k) @ p @ ph + phk - phk @ p @ a


@register("linalg_pinv")
def linalg_pinv(A, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """``torch.linalg.pinv``: the Moore-Penrose pseudo-inverse (algorithm and gradient in the
    module docstring)."""
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "linalg.pinv", square=hermitian)
    return Pinv.apply(A, atol=atol, rtol=rtol, hermitian=bool(hermitian))


@register("pinverse")
def pinverse(input, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv`` with ``rtol=rcond``."""
    return linalg_pinv(input, rtol=rcond)


# ----------------------------------------------------------------------------- rank
@register("linalg_matrix_rank")
def linalg_matrix_rank(A, tol=None, hermitian: bool = False, *, atol=None, rtol=None) -> Tensor:
    """``torch.linalg.matrix_rank``: the number of singular values (absolute eigenvalues when
    ``hermitian``) above ``max(atol, rtol * largest)``; ``tol`` is the legacy ``atol``."""
    from ..autograd import _wrap

    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "linalg.matrix_rank", square=hermitian)
    if tol is not None:
        atol, rtol = tol, 0.0
    a = A.array
    xp = get_array_module(a)
    m, n = a.shape[-2:]
    atol, rtol = _tolerances(xp, a.dtype, m, n, atol, rtol)
    if hermitian:
        s = xp.abs(_lapack(lambda: xp.linalg.eigvalsh(a), "linalg.matrix_rank"))
    else:
        s = _lapack(lambda: xp.linalg.svd(a, compute_uv=False), "linalg.matrix_rank")
    if s.shape[-1] == 0:
        return _wrap(xp.zeros(a.shape[:-2], dtype=np.int64))
    cut = xp.maximum(_as_array(atol, s), _as_array(rtol, s) * s.max(-1))
    return _wrap((s > cut[..., None]).sum(-1).astype(np.int64))


# ----------------------------------------------------------------------------- lstsq
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@register("linalg_lstsq")
def linalg_lstsq(A, B, rcond=None, *, driver=None):
    """``torch.linalg.lstsq``: ``(solution, residuals, rank, singular_values)`` of
    ``min |A X - B|`` (details in the module docstring). A vector ``B`` is not accepted, as in
    torch (``B.unsqueeze(-1)``)."""
    from ..autograd import _wrap

    A, B = as_tensor_arg(A, "A"), as_tensor_arg(B, "B")
    check_float_matrix(A, "linalg.lstsq")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss), got {driver!r}")
    if B.ndim < 2 or B.shape[-2] != A.shape[-2]:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-2) (A: {tuple(A.shape)}, "
            f"B: {tuple(B.shape)}); a vector b is the matrix b.unsqueeze(-1)"
        )
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, "
                           f"but got input's dtype {A.dtype} and other's dtype {B.dtype}")
    m, n = A.shape[-2:]
    rtol = None if rcond is None or rcond < 0 else rcond
    solution = linalg_pinv(A, rtol=rtol) @ B
    xp = get_array_module(A.array)
    empty = _wrap(xp.zeros((0,), dtype=A.array.dtype))
    rank = linalg_matrix_rank(A.detach(), rtol=rtol) if driver != "gels" else _wrap(xp.zeros((0,), dtype=np.int64))
    svals = linalg_svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    residuals = empty
    if m > n and driver != "gelsy":
        full = rank if driver != "gels" else linalg_matrix_rank(A.detach(), rtol=rtol)
        if bool((full.array == n).all()):
            residuals = ((A @ solution - B) ** 2).sum(-2)
    return return_types.linalg_lstsq(solution, residuals, rank, svals)


# ----------------------------------------------------------------------------- matrix_exp
_TAYLOR_DEGREE = 18


def _expm_array(xp, a):
    """``exp(a)`` by scaling and squaring with a Taylor polynomial (module docstring)."""
    n = a.shape[-1]
    norm1 = float(xp.abs(a).sum(-2).max()) if a.size else 0.0
    # a non-finite input gives a non-finite result without squarings
    s = int(math.ceil(math.log2(norm1 / 0.5))) if math.isfinite(norm1) and norm1 > 0.5 else 0
    x = a / (2.0 ** s)
    eye = xp.broadcast_to(xp.eye(n, dtype=a.dtype), a.shape)
    out = eye + x / _TAYLOR_DEGREE
    for k in range(_TAYLOR_DEGREE - 1, 0, -1):  # Horner: I + x/1 (I + x/2 (I + ...))
        out = eye + (x @ out) / k
    for _ in range(s):
        out = out @ out
    return out


class MatrixExp(Function):
    save_inputs = (0,)

    def forward(self, a):
        self.a = a
        return _expm_array(get_array_module(a), a).astype(a.dtype, copy=False)

    def backward(self, g):
        xp = get_array_module(g)
        at = _mT(self.a)
        n = at.shape[-1]
        zero = xp.zeros_like(at)
        block = xp.concatenate([xp.concatenate([at, g], -1), xp.concatenate([zero, at], -1)], -2)
        return _expm_array(xp, block)[..., :n, n:].astype(self.a.dtype, copy=False)

    def backward_graph(self, g):  # the same block exponential, of Tensors: any order
        at = self.saved_input(0, self.a).mT
        n = at.shape[-1]
        cat = _gg.op("cat")
        zero = _gg.const(get_array_module(g.array).zeros(at.shape, g.array.dtype))
        block = cat([cat([at, g], -1), cat([zero, at], -1)], -2)
        return MatrixExp.apply(block)[..., :n, n:]


@register("linalg_matrix_exp", "matrix_exp")
def linalg_matrix_exp(A) -> Tensor:
    """``torch.linalg.matrix_exp`` / ``torch.matrix_exp``: the matrix exponential of square
    matrices (algorithm and gradient in the module docstring)."""
    A = as_tensor_arg(A, "A")
    check_float_matrix(A, "linalg.matrix_exp", square=True)
    return MatrixExp.apply(A)


matrix_exp = linalg_matrix_exp


# ----------------------------------------------------------------------------- cond
@register("linalg_cond")
def linalg_cond(A, p=None) -> Tensor:
    """``torch.linalg.cond``: the condition number of ``A`` in the ``p`` norm."""
    from ._linalg_names import inv, matrix_norm

    A = as_tensor_arg(A, "A")
    if p is None or p in (2, -2):
        check_float_matrix(A, "linalg.cond")
        s = linalg_svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    check_float_matrix(A, "linalg.cond", square=True)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


# ----------------------------------------------------------------------------- cholesky_ex
@register("linalg_cholesky_ex")
def linalg_cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):
    """``torch.linalg.cholesky_ex``: ``(L, info)`` without raising for a matrix that is not
    positive-definite (unless ``check_errors``): ``info`` is the order of its first leading
    minor that is not, and its ``L`` is NaN (torch leaves a partial factor there)."""
    from ..autograd import _wrap

    A = as_tensor_arg(A, "A")
    try:
        low = linalg_cholesky(A, upper=upper)
        return return_types.linalg_cholesky_ex(low, _wrap(get_array_module(A.array).zeros(A.shape[:-2], dtype=np.int32)))
    except LinAlgError:
        if check_errors:
            raise
    a = A.array
    xp = get_array_module(a)
    flat = a.reshape((-1,) + a.shape[-2:])
    info = xp.zeros((flat.shape[0],), dtype=np.int32)
    low = xp.zeros_like(flat)
    for b in range(flat.shape[0]):  # the failing batch: factor each matrix on its own
        try:
            with linalg_errors_raised():
                low[b] = xp.linalg.cholesky(flat[b])
        except np.linalg.LinAlgError:
            info[b] = _first_bad_minor(xp, flat[b])
            low[b] = np.nan
    low = low.reshape(a.shape)
    if upper:
        low = _mT(low).copy()
    return return_types.linalg_cholesky_ex(_wrap(low), _wrap(info.reshape(a.shape[:-2])))


# ----------------------------------------------------------------------------- legacy norms
@register("nuclear_norm")
def nuclear_norm(input, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    """``torch.nuclear_norm`` (deprecated in torch): ``linalg.matrix_norm(A, 'nuc', dim, keepdim)``;
    ``nuclear_norm(A, True)`` is keepdim over the last two dims, as torch's overload."""
    from ._linalg_names import matrix_norm

    if isinstance(dim, bool):
        dim, keepdim = (-2, -1), dim
    return matrix_norm(as_tensor_arg(input), "nuc", tuple(dim), keepdim)


@register("frobenius_norm")
def frobenius_norm(input, dim, keepdim: bool = False) -> Tensor:
    """``torch.frobenius_norm`` (deprecated in torch): ``linalg.vector_norm(A, 2, dim, keepdim)``."""
    from .reduce import vector_norm

    return vector_norm(as_tensor_arg(input), 2, tuple(dim) if not isinstance(dim, int) else dim, keepdim)


@register("triangular_solve")
def triangular_solve(input, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False):
    """``torch.triangular_solve(b, A)`` (deprecated in torch for ``linalg.solve_triangular``,
    whose arguments are reversed): ``(solution, cloned_coefficient)`` with ``A X = b``
    (``A^T X = b`` when ``transpose``) reading the ``upper`` (default) or lower triangle;
    ``cloned_coefficient`` is a copy of ``A``."""
    A, b = as_tensor_arg(A, "A"), as_tensor_arg(input)
    lhs, up = (A.mT, not upper) if transpose else (A, upper)
    x = linalg_solve_triangular(lhs, b, upper=up, unitriangular=unitriangular)
    return return_types.triangular_solve(x, A.clone())
