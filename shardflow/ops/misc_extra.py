"""The last batch of the torch-namespace gap list: integer math (``gcd``, ``lcm``,
``bitwise_left_shift`` / ``bitwise_right_shift``), ``frexp``, integration (``trapezoid`` /
``trapz``, ``cumulative_trapezoid``), window functions (``hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window``), ``vander``, ``histogram``, the
scatter-into-a-view ops (``select_scatter``, ``slice_scatter``, ``diagonal_scatter``) and the
top-level names of in-place ops that exist as methods (``acos_``, ``asin_``, ``atan_`` and
their ``arc*_`` aliases, ``neg_``, ``zero_``, ``reciprocal_``, ``detach_``).

* Integer ops, ``frexp``, ``histogram`` and the windows have no gradient.
* ``trapezoid(y, x=None, dx=1, dim=-1) = sum((y[1:] + y[:-1]) / 2 * dx)`` (``dx = diff(x)``
  when ``x`` is given); ``cumulative_trapezoid`` keeps the running sums. Compositions, so
  differentiable in ``y`` (and ``x``).
* Windows follow PyTorch's formulas with ``periodic=True`` by default (a window of
  ``N + 1`` points without its last one); ``kaiser_window`` uses NumPy's ``i0``.
* ``*_scatter(input, src, ...)``: a copy of ``input`` with the view (``select(dim, index)``,
  ``narrow``-like ``slice(dim, start, end, step)``, ``diagonal(offset, dim1, dim2)``)
  replaced by ``src``; built from ``clone`` and indexed assignment, so both get gradients.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import CPU, as_dtype, device_of, dtypes, get_array_module, to_device
from ._util import promote, wrap_dim
from .arithmetic import neg_
from .conversion import zero_
from .elementwise import acos_, asin_, atan_
from .not_differentiable import NotDifferentiable

__all__ = ["gcd", "gcd_", "lcm", "lcm_", "bitwise_left_shift", "bitwise_right_shift", "frexp", "trapezoid", "trapz",
           "cumulative_trapezoid", "hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "vander", "histogram", "select_scatter", "slice_scatter", "diagonal_scatter",
           "acos_", "asin_", "atan_", "arccos_", "arcsin_", "arctan_", "neg_", "zero_",
           "reciprocal_", "detach_"]

arccos_ = register("arccos_")(acos_)
arcsin_ = register("arcsin_")(asin_)
arctan_ = register("arctan_")(atan_)


def _ops():
    from .. import ops

    return ops


@register("reciprocal_")
def reciprocal_(input) -> Tensor:
    from ._util import inplace
    from .arithmetic import reciprocal

    return inplace(input, reciprocal(input))


@register("detach_")
def detach_(input) -> Tensor:
    """Detach ``input`` from the graph in place: it becomes a leaf that requires no grad."""
    input.grad_fn = None
    input.requires_grad = False
    return input


# ---------------------------------------------------------------------------- integer math
def _int_binary(name, ufunc):
    def fn(input, other):
        a, b = promote(input, other)
        arr_a = a.array if isinstance(a, Tensor) else a
        arr_b = b.array if isinstance(b, Tensor) else b
        for v in (arr_a, arr_b):
            if getattr(v, "dtype", np.dtype(np.int64)).kind not in "iub":
                raise RuntimeError(f"\"{name}_cpu\" not implemented for '{v.dtype}': {name} takes integer tensors")
        like = arr_a if hasattr(arr_a, "dtype") else arr_b
        return _wrap(get_array_module(like).asarray(ufunc(arr_a, arr_b)).astype(like.dtype, copy=False))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}`` on integer tensors (no gradient)."
    return register(name)(fn)


gcd = _int_binary("gcd", np.gcd)
lcm = _int_binary("lcm", np.lcm)
bitwise_left_shift = _int_binary("bitwise_left_shift", np.left_shift)
bitwise_right_shift = _int_binary("bitwise_right_shift", np.right_shift)


@register("gcd_")
def gcd_(input, other) -> Tensor:
    from ._util import inplace

    return inplace(input, gcd(input, other))


@register("lcm_")
def lcm_(input, other) -> Tensor:
    from ._util import inplace

    return inplace(input, lcm(input, other))


@register("frexp")
def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, ``|mantissa|`` in [0.5, 1)."""
    from .reduce import return_types

    a = input.array
    if a.dtype.kind not in "fV":
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype}")
    xp = get_array_module(a)
    m, e = xp.frexp(a.astype(np.float32) if a.dtype.kind == "V" else a)
    return return_types.frexp(_wrap(m.astype(a.dtype)), _wrap(e.astype(np.int32)))


# ---------------------------------------------------------------------------- integration
def _spacing(y, x, dx, d):
    ops = _ops()
    n = y.shape[d]
    if x is None:
        return 1.0 if dx is None else dx
    if x.ndim == 1:
        shape = [1] * y.ndim
        shape[d] = n - 1
        return ops.diff(x).reshape(shape)
    return ops.diff(x, dim=d)


@register("trapezoid", "trapz")
def trapezoid(y, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim`` (``x``: sample points, else spacing ``dx``, default 1)."""
    ops = _ops()
    if isinstance(x, int | float) and dx is None:  # torch.trapz(y, dx) spelling
        x, dx = None, x
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    if n == 0:
        return ops.sum(y, d) * 0
    avg = (ops.narrow(y, d, 1, n - 1) + ops.narrow(y, d, 0, n - 1)) / 2
    return ops.sum(avg * _spacing(y, x, dx, d), d)


trapz = trapezoid


@register("cumulative_trapezoid")
def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal sums along ``dim`` (one fewer element)."""
    ops = _ops()
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    avg = (ops.narrow(y, d, 1, n - 1) + ops.narrow(y, d, 0, n - 1)) / 2
    return ops.cumsum(avg * _spacing(y, x, dx, d), d)


# ---------------------------------------------------------------------------- windows
def _window(name, n, periodic, dtype, device, requires_grad, values, layout=None, pin_memory=False):
    from ._factory_options import check_factory_options
    from .creation import tensor

    check_factory_options(name, layout, pin_memory)

    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    d = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if not d.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if n == 0:
        arr = np.zeros(0)
    elif n == 1:
        arr = np.ones(1)
    else:
        m = n + 1 if periodic else n
        arr = values(np.arange(m, dtype=np.float64), m)[:n]
    return tensor(arr, dtype=d, device=device, requires_grad=requires_grad)


@register("hann_window")
def hann_window(window_length: int, periodic: bool = True, *, dtype=None, device=None, layout=None,
                requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 0.5 - 0.5 * np.cos(2 * math.pi * k / (m - 1)), layout=layout, pin_memory=pin_memory)


@register("hamming_window")
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, device=None, layout=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: alpha - beta * np.cos(2 * math.pi * k / (m - 1)), layout=layout, pin_memory=pin_memory)


@register("blackman_window")
def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, device=None, layout=None,
                    requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 0.42 - 0.5 * np.cos(2 * math.pi * k / (m - 1)) + 0.08 * np.cos(4 * math.pi * k / (m - 1)), layout=layout, pin_memory=pin_memory)


@register("bartlett_window")
def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device=None, layout=None,
                    requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 1 - np.abs(2 * k / (m - 1) - 1), layout=layout, pin_memory=pin_memory)


@register("kaiser_window")
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, device=None,
                  layout=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None))) / np.i0(beta), layout=layout, pin_memory=pin_memory)


# ---------------------------------------------------------------------------- vander, histogram
@register("vander")
def vander(x, N=None, increasing: bool = False) -> Tensor:
    """Columns ``x ** (N - 1), ..., x ** 0`` (reversed with ``increasing``)."""
    ops = _ops()
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    powers = range(n) if increasing else range(n - 1, -1, -1)
    cols = [x ** p if p else ops.ones_like(x) for p in powers]
    return ops.stack(cols, 1) if cols else x.reshape(-1, 1)[:, :0]


@register("histogram")
def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):
    """``(hist, bin_edges)`` as NumPy's ``histogram`` (``bins`` an int or the edges tensor).
    Not differentiable, but in the graph as torch has it: when ``input`` (or a ``bins`` /
    ``weight`` tensor) requires grad, both outputs do, with torch's ``NotImplemented`` node,
    and a backward through them raises (``not_differentiable.py``); so programs that plot a
    histogram of an activation call ``.detach()`` on it, as they must with torch."""
    from .reduce import return_types

    tensors = [input] + [t for t in (bins, weight) if isinstance(t, Tensor)]

    def compute(a, *rest):
        rest = iter(rest)
        b = to_device(next(rest), CPU) if isinstance(bins, Tensor) else bins
        w = to_device(next(rest), CPU).reshape(-1) if weight is not None else None
        x = to_device(a, CPU)
        hist, edges = np.histogram(x.astype(np.float64).reshape(-1), bins=b, range=range, weights=w,
                                   density=density)
        return (to_device(hist.astype(x.dtype), device_of(a)), to_device(edges.astype(x.dtype), device_of(a)))

    hist, edges = NotDifferentiable.apply(*tensors, forward_fn=compute, name="histogram")
    return return_types.histogram(hist, edges)


# ---------------------------------------------------------------------------- scatter into views
@register("select_scatter")
def select_scatter(input, src, dim: int, index: int) -> Tensor:
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    d = wrap_dim(dim, input.ndim)
    out = input.clone()
    out[(slice(None),) * d + (index,)] = src
    return out


@register("slice_scatter")
def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:
    """``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) replaced by ``src``."""
    d = wrap_dim(dim, input.ndim)
    out = input.clone()
    out[(slice(None),) * d + (slice(start, end, step),)] = src
    return out


@register("diagonal_scatter")
def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with its ``offset`` diagonal over (``dim1``, ``dim2``) replaced by ``src``."""
    ops = _ops()
    d1, d2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    n1, n2 = input.shape[d1], input.shape[d2]
    k = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    rows = np.arange(k) + max(-offset, 0)
    cols = np.arange(k) + max(offset, 0)
    moved = ops.movedim(input.clone(), (d1, d2), (-2, -1))
    moved[..., _wrap(rows), _wrap(cols)] = src
    return ops.movedim(moved, (-2, -1), (d1, d2))
