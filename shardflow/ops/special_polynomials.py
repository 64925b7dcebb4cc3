"""``torch.special``'s orthogonal polynomials ``P_n(x)``: Chebyshev ``T, U, V, W`` and
their shifted forms (``P*_n(x) = P_n(2x - 1)``), Hermite ``H`` (physicists') and ``He``
(probabilists'), Laguerre ``L`` and Legendre ``P``.

ATen's algorithm (``aten/src/ATen/native/Math.h``), element-parallel with the array module
(NumPy or CuPy), in the promoted floating dtype of ``(x, n)`` (float32 for the half types),
as ATen computes (so float32 overflows to inf or NaN where ATen's does):

* ``n`` is truncated to an integer (a non-finite ``n`` counts as negative); ``n < 0`` gives 0.
* Exact values at the ends of the interval: Chebyshev and Legendre at ``|x| = 1`` (shifted
  Chebyshev at ``x = 0, 1``), ``L_n(0) = 1``.
* Chebyshev for ``|x| < 1`` and ``n > 8`` (``T``: ``n > 6``) uses the trigonometric form
  (``T_n = cos(n t)``, ``U_n = sin((n+1) t) / sin t``, ``V_n = cos((n+1/2) t) / cos(t/2)``,
  ``W_n = sin((n+1/2) t) / sin(t/2)``, ``t = acos x``).
* Otherwise the three-term recurrence from ``P_0``, ``P_1`` up to ``n``; an element stops
  once its value is NaN (so an overflowing ``|x| > 1`` ends the loop as ATen's does).
  Hermite polynomials of degree above 128 (float32; 512 for float64) are NaN, as in ATen.

Broadcasting: ``x`` and ``n`` broadcast; either may be a Python number (not both). PyTorch
has no derivative for these: the result does not require grad, as PyTorch's
(``special_common.NoDerivative``).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module
from .special_common import NoDerivative, float_pair, meta_result, no_graph, write_out

__all__: list[str] = []


def _degree(n):
    """``n`` (float array) truncated to int64; non-finite or out-of-range values -> -1."""
    xp = get_array_module(n)
    ok = xp.isfinite(n) & (xp.abs(n) < 2.0 ** 62)
    return xp.where(ok, xp.trunc(xp.where(ok, n, -1.0)), -1.0).astype(np.int64)


def _three_term(x, n, p1, step, todo):
    """``P_n`` where ``todo`` (else 0) by ``P_{k+1} = step(k, P_k, P_{k-1})`` from ``P_0 = 1``
    and ``P_1 = p1``, each element advancing until ``k = n`` or its value is NaN."""
    xp = get_array_module(x)
    p, q = xp.ones_like(x), p1
    kmax = int(n[todo].max()) if bool(todo.any()) else 0
    for k in range(1, kmax):
        active = todo & (n > k) & ~xp.isnan(q)
        if not bool(active.any()):
            break
        r = step(k, q, p)
        p, q = xp.where(active, q, p), xp.where(active, r, q)
    return q


def _chebyshev(z, n, kind: str, at_one, at_minus_one, trig_from: int):
    """Chebyshev ``kind`` (t/u/v/w) at ``z``; ``at_one`` / ``at_minus_one``: ``P_n(+-1)``."""
    xp = get_array_module(z)
    with np.errstate(all="ignore"):
        theta = xp.arccos(xp.clip(z, -1.0, 1.0))
        nf = n.astype(z.dtype)
        trig = {"t": lambda: xp.cos(nf * theta),
                "u": lambda: xp.sin((nf + 1) * theta) / xp.sin(theta),
                "v": lambda: xp.cos((nf + 0.5) * theta) / xp.cos(theta / 2),
                "w": lambda: xp.sin((nf + 0.5) * theta) / xp.sin(theta / 2)}[kind]()
        p1 = {"t": z, "u": 2 * z, "v": 2 * z - 1, "w": 2 * z + 1}[kind]
        use_trig = (n > trig_from) & (xp.abs(z) < 1)
        edge = (z == 1) | (z == -1)
        todo = (n >= 2) & ~use_trig & ~edge
        rec = _three_term(z, n, p1, lambda k, q, p: 2 * z * q - p, todo)
        out = xp.where(n == 0, 1.0, xp.where(n == 1, p1, xp.where(use_trig, trig, rec)))
        out = xp.where(edge, xp.where(z == 1, at_one, at_minus_one), out)
    return xp.where(n < 0, 0.0, out)


def _parity(n, even, odd):
    xp = get_array_module(n)
    return xp.where(n % 2 == 0, even, odd)


def _cheb_t(z, n):
    return _chebyshev(z, n, "t", 1.0, _parity(n, 1.0, -1.0), 6)


def _cheb_u(z, n):
    m = (n + 1).astype(z.dtype)
    return _chebyshev(z, n, "u", m, _parity(n, m, -m), 8)


def _cheb_v(z, n):
    m = (2 * n + 1).astype(z.dtype)
    return _chebyshev(z, n, "v", 1.0, _parity(n, m, -m), 8)


def _cheb_w(z, n):
    m = (2 * n + 1).astype(z.dtype)
    return _chebyshev(z, n, "w", m, _parity(n, 1.0, -1.0), 8)


def _hermite(x, n, physicists: bool, limit: int):
    xp = get_array_module(x)
    p1 = 2 * x if physicists else x
    if physicists:
        def step(k, q, p):
            return 2 * x * q - 2 * k * p
    else:
        def step(k, q, p):
            return x * q - k * p
    with np.errstate(all="ignore"):
        rec = _three_term(x, n, p1, step, (n >= 2) & (n <= limit))
        out = xp.where(n == 0, 1.0, xp.where(n == 1, p1, rec))
        out = xp.where(n > limit, np.nan, out)
    return xp.where(n < 0, 0.0, out)


def _laguerre(x, n):
    xp = get_array_module(x)
    with np.errstate(all="ignore"):
        p1 = 1.0 - x
        rec = _three_term(x, n, p1, lambda k, q, p: ((2 * k + 1 - x) * q - k * p) / (k + 1),
                          (n >= 2) & (x != 0))
        out = xp.where(n == 0, 1.0, xp.where(n == 1, p1, rec))
        out = xp.where(x == 0, 1.0, out)
    return xp.where(n < 0, 0.0, out)


def _legendre(x, n):
    xp = get_array_module(x)
    with np.errstate(all="ignore"):
        edge = xp.abs(x) == 1
        rec = _three_term(x, n, x, lambda k, q, p: ((2 * k + 1) * x * q - k * p) / (k + 1),
                          (n >= 2) & ~edge)
        out = xp.where(n == 0, 1.0, xp.where(n == 1, x, rec))
        out = xp.where(edge, xp.where((x > 0) | (n % 2 == 0), 1.0, -1.0), out)
    return xp.where(n < 0, 0.0, out)


_HERMITE_LIMIT = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}


def _kernel(fn, shifted: bool = False, hermite: bool | None = None):
    """The array function ``(x, n) -> P_n(x)`` of dtype ``x.dtype`` for ``fn``."""

    def kernel(x, n):
        meta = meta_result(x, n)
        if meta is not None:
            return meta
        xp = get_array_module(x)
        x, n = xp.broadcast_arrays(x, n)
        # ATen's arithmetic type: float32 stays float32 (so it overflows where ATen does)
        work = x.astype(x.dtype if x.dtype in _HERMITE_LIMIT else np.float32, copy=False)
        degree = _degree(n.astype(np.float64))
        if hermite is not None:
            out = fn(work, degree, hermite, _HERMITE_LIMIT.get(x.dtype, 1024))
        else:
            out = fn(2 * work - 1 if shifted else work, degree)
        return out.astype(x.dtype, copy=False)

    return kernel


def _polynomial(name: str, kernel, formula: str):
    def op(input, n, *, out=None) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special.{name}(input, n): at least one of input and n must be a "
                            f"Tensor, got {type(input).__name__} and {type(n).__name__}")
        x, nt = float_pair(input, n)
        return write_out(NoDerivative.apply(*no_graph(x, nt), fn=kernel, name=name), out, f"special_{name}")

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``torch.special.{name}(input, n)``: {formula} (module docstring); no " \
                 "derivative, as in PyTorch."
    return register(f"special_{name}")(op)


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", _kernel(_cheb_t),
                                     "the Chebyshev polynomial of the first kind T_n(x)")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", _kernel(_cheb_u),
                                     "the Chebyshev polynomial of the second kind U_n(x)")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", _kernel(_cheb_v),
                                     "the Chebyshev polynomial of the third kind V_n(x)")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", _kernel(_cheb_w),
                                     "the Chebyshev polynomial of the fourth kind W_n(x)")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t",
                                             _kernel(_cheb_t, shifted=True), "T_n(2x - 1)")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u",
                                             _kernel(_cheb_u, shifted=True), "U_n(2x - 1)")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v",
                                             _kernel(_cheb_v, shifted=True), "V_n(2x - 1)")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w",
                                             _kernel(_cheb_w, shifted=True), "W_n(2x - 1)")
hermite_polynomial_h = _polynomial("hermite_polynomial_h", _kernel(_hermite, hermite=True),
                                   "the physicists' Hermite polynomial H_n(x)")
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _kernel(_hermite, hermite=False),
                                    "the probabilists' Hermite polynomial He_n(x)")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _kernel(_laguerre),
                                    "the Laguerre polynomial L_n(x)")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _kernel(_legendre),
                                    "the Legendre polynomial P_n(x)")
