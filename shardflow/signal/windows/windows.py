"""``torch.signal.windows``: SciPy-style window functions (PyTorch's formulas and checks).

Each window is computed in float64 with NumPy at the sample positions PyTorch uses (a
``linspace`` over the window, ``N = M - 1`` points apart when ``sym=True``, ``M`` when
``sym=False``, the periodic window for spectral analysis), then cast to ``dtype`` (float32 or
float64; default: the default dtype). ``M == 0`` gives an empty tensor, ``M == 1`` a one
(where PyTorch special-cases it). ``requires_grad=True`` gives a leaf that requires grad
(PyTorch's window is the non-leaf result of ops on a ``linspace`` that requires grad; no
gradient flows to anything in either case).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ...backend import as_dtype, dtypes
from ...backend.layout import strided
from ...ops.creation import tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout):
    """PyTorch's common checks (same order and messages); the resolved dtype."""
    d = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if d not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {d}")
    return d


def _make(values, d, device, requires_grad):
    return tensor(np.asarray(values, dtype=np.float64), dtype=d, device=device,
                  requires_grad=requires_grad)


def _positions(start: float, step: float, M: int) -> np.ndarray:
    """``linspace(start, start + (M - 1) * step, M)``."""
    return start + step * np.arange(M, dtype=np.float64)


def _tiny(M: int, d, device, requires_grad):
    """The M == 0 / M == 1 windows, or None."""
    if M == 0:
        return _make(np.zeros(0), d, device, requires_grad)
    if M == 1:
        return _make(np.ones(1), d, device, requires_grad)
    return None


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=strided, device=None, requires_grad: bool = False):
    """``exp(-|n - center| / tau)``; ``center`` defaults to the window's middle."""
    d = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _make(np.zeros(0), d, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(-center / tau, 1 / tau, M)
    return _make(np.exp(-np.abs(k)), d, device, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
           requires_grad: bool = False):
    """The sine window ``sin(pi (n + 0.5) / M)`` (SciPy's ``cosine``)."""
    d = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _make(np.zeros(0), d, device, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    return _make(np.sin(_positions(0.5 * constant, constant, M)), d, device, requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=strided,
             device=None, requires_grad: bool = False):
    """``exp(-(n - c)^2 / (2 std^2))`` around the window's middle ``c``."""
    d = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _make(np.zeros(0), d, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _positions(start * constant, constant, M)
    return _make(np.exp(-(k ** 2)), d, device, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=strided,
           device=None, requires_grad: bool = False):
    """``I0(beta sqrt(1 - (2n/N - 1)^2)) / I0(beta)``, ``N = M - 1`` if ``sym`` else ``M``."""
    d = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    tiny = _tiny(M, d, device, requires_grad)
    if tiny is not None:
        return tiny
    k = np.minimum(_positions(-beta, 2.0 * beta / (M if not sym else M - 1), M), beta)
    return _make(np.i0(np.sqrt(np.maximum(beta * beta - k ** 2, 0.0))) / np.i0(beta), d, device,
                 requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False):
    """The triangular window ``1 - |2n/N - 1|``."""
    d = _checks("bartlett", M, dtype, layout)
    tiny = _tiny(M, d, device, requires_grad)
    if tiny is not None:
        return tiny
    k = _positions(-1.0, 2 / (M if not sym else M - 1), M)
    return _make(1 - np.abs(k), d, device, requires_grad)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=strided, device=None,
                   requires_grad: bool = False):
    """``sum_i (-1)^i a_i cos(2 pi i n / N)``."""
    d = _checks("general_cosine", M, dtype, layout)
    tiny = _tiny(M, d, device, requires_grad)
    if tiny is not None:
        return tiny
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _positions(0.0, 2 * math.pi / (M if not sym else M - 1), M)  # (M,)
    coef = np.array([(-1) ** i * w for i, w in enumerate(a)], dtype=np.float64)  # (A,)
    terms = coef[:, None] * np.cos(np.arange(len(coef))[:, None] * k)  # (A, M)
    return _make(terms.sum(0), d, device, requires_grad)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=strided,
                    device=None, requires_grad: bool = False):
    """``alpha - (1 - alpha) cos(2 pi n / N)``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False):
    """``general_hamming`` with ``alpha = 0.54``."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
         requires_grad: bool = False):
    """``general_hamming`` with ``alpha = 0.5``."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False):
    """``general_cosine`` with ``a = [0.42, 0.5, 0.08]``."""
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False):
    """``general_cosine`` with Nuttall's four coefficients."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          layout=layout, device=device, requires_grad=requires_grad)
