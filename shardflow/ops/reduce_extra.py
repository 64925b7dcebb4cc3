"""More reductions and scans with PyTorch's names: ``nansum``, ``nanmean``, ``cummax``,
``cummin``, ``logcumsumexp``, ``diff``, ``trace``, ``dist``, ``quantile``, ``nanquantile``.

* ``nansum`` / ``nanmean``, ``diff``, ``trace``, ``dist`` are compositions of existing ops
  (``where`` / ``sum`` / slicing / ``diagonal`` / ``vector_norm``), so their gradients are
  those ops' (NaN positions get zero, as PyTorch).
* ``cummax`` / ``cummin`` return ``(values, indices)``: the running extreme and the index it
  came from — the latest index on ties; once a NaN is met the values stay NaN and the
  index is the latest NaN's (PyTorch's answers). Backward adds each output gradient to the input position of its index.
* ``logcumsumexp``: ``logaddexp.accumulate`` along the dim (exact and stable; on a GPU a
  log-depth scan, ``backend/ufuncs.py``). Backward
  ``grad_j = sum_{i >= j} g_i exp(x_j - out_i)``, computed in log space for the positive
  and negative parts of ``g`` separately (a reversed logcumsumexp of ``log|g| - out``), so
  nothing over- or underflows.
* ``quantile(input, q, dim, keepdim, interpolation)``: sort along the dim, then interpolate
  between the values at ranks ``floor`` and ``ceil`` of ``q (n - 1)`` (``linear``,
  ``lower``, ``higher``, ``midpoint``, ``nearest`` with round-half-to-even, as PyTorch); a
  slice holding a NaN gives NaN. ``nanquantile`` uses the non-NaN count of each slice
  instead (NaNs sort last). Built from ``sort``, ``take_along_dim`` and ``lerp``, so the
  gradient flows to the elements the result is made of. A ``q`` tensor adds its dim first.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module
from ..backend.ufuncs import accumulate
from . import _grad_graph as _gg
from ._util import refuse_complex, wrap_dim
from .index import _add_at
from .reduce import dist_norm, return_types

__all__ = ["nansum", "nanmean", "cummax", "cummin", "logcumsumexp", "diff", "trace", "dist",
           "quantile", "nanquantile"]


def _ops():
    from .. import ops  # the op functions themselves (resolved at call time, no import cycle)

    return ops


@register("nansum")
def nansum(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum treating NaN as zero."""
    ops = _ops()
    x = ops.where(ops.isnan(input), 0, input) if input.dtype.is_floating_point else input
    return ops.sum(x, dim, keepdim, dtype=dtype) if dim is not None else ops.sum(x, dtype=dtype)


@register("nanmean")
def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean over the non-NaN values (NaN where a slice has none)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {input.dtype}")
    ops = _ops()
    if dtype is not None:
        input = input.to(dtype)
    count = (~ops.isnan(input)).sum(dim, keepdim) if dim is not None else (~ops.isnan(input)).sum()
    return nansum(input, dim, keepdim) / count.to(input.dtype)


# ---------------------------------------------------------------------------- cummax / cummin
class CumExtreme(Function):
    save_inputs = ()

    def forward(self, a, dim, largest):
        xp = get_array_module(a)
        self.shape, self.dim = a.shape, dim
        if a.ndim == 0:
            self.idx = xp.zeros((), np.int64)
            return a.copy(), self.idx
        x = xp.moveaxis(a, dim, -1)
        acc = accumulate("maximum" if largest else "minimum", x, axis=-1)  # NaN propagates
        hit = (x == acc) | xp.isnan(x)  # a new extreme (the latest on ties), or a NaN
        pos = xp.arange(x.shape[-1])
        idx = accumulate("maximum", xp.where(hit, pos, -1), axis=-1).astype(np.int64)
        self.idx = xp.moveaxis(idx, -1, dim)
        return xp.moveaxis(acc, -1, dim), self.idx

    def backward(self, g, _gi=None):
        xp = get_array_module(g)
        out = xp.zeros(self.shape, g.dtype)
        if g.ndim == 0:
            return g.copy()
        gm, im = xp.moveaxis(g, self.dim, -1), xp.moveaxis(self.idx, self.dim, -1)
        om = xp.moveaxis(out, self.dim, -1)  # a view: writes land in ``out``
        lead = tuple(xp.asarray(ix)[..., None] for ix in np.indices(gm.shape[:-1]))
        _add_at(om, lead + (im,), gm)
        return out

    def backward_graph(self, g, _gi=None):
        if g.ndim == 0:
            return g
        idx, dim = _wrap(self.idx), self.dim
        return _gg.adjoint(self, g, lambda t: _gg.op("take_along_dim")(t, idx, dim))


def _cum_extreme(input, dim, largest, name):
    refuse_complex(input, kernel=f"{name}_cpu")
    d = wrap_dim(int(dim), input.ndim)
    vals, idx = CumExtreme.apply(input, dim=d, largest=largest)
    return getattr(return_types, name)(vals, idx)


@register("cummax")
def cummax(input, dim: int):
    """Running maximum along ``dim`` and the index it came from (module docstring)."""
    return _cum_extreme(input, dim, True, "cummax")


@register("cummin")
def cummin(input, dim: int):
    """Running minimum along ``dim`` and the index it came from (module docstring)."""
    return _cum_extreme(input, dim, False, "cummin")


# ---------------------------------------------------------------------------- logcumsumexp
def _rev_logcumsumexp(v, axis):
    xp = get_array_module(v)
    r = xp.flip(v, axis=axis)
    return xp.flip(accumulate("logaddexp", r, axis=axis), axis=axis)


class LogCumSumExp(Function):
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dim):
        self.a, self.dim = a, dim
        if a.ndim == 0:
            self.out = a.copy()
        elif a.dtype.kind == "c":  # no complex logaddexp ufunc: shifted by the largest real part
            xp = get_array_module(a)
            m = xp.max(a.real, axis=dim, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)
            self.out = (xp.log(xp.cumsum(xp.exp(a - m), axis=dim)) + m).astype(a.dtype, copy=False)
        else:
            self.out = accumulate("logaddexp", a, axis=dim)
        return self.out

    def backward(self, g):
        xp = get_array_module(g)
        if g.ndim == 0:
            return g.copy()
        a, out, d = self.a, self.out, self.dim
        if g.dtype.kind == "c":
            # gx_k = sum_{j >= k} g_j conj(exp(a_k - out_j)) (conjugate Wirtinger, as torch)
            m = xp.max(a.real, axis=d, keepdims=True)
            m = xp.where(xp.isfinite(m), m, 0)
            rev = xp.flip(xp.cumsum(xp.flip(g * xp.conj(xp.exp(m - out)), axis=d), axis=d), axis=d)
            return (rev * xp.conj(xp.exp(a - m))).astype(g.dtype, copy=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            gx = xp.zeros_like(g)
            for sign in (1.0, -1.0):
                part = xp.where(sign * g > 0, xp.log(xp.abs(g)), -xp.inf) - out
                gx = gx + sign * xp.exp(_rev_logcumsumexp(part, d) + a)
        return gx.astype(g.dtype, copy=False)

    def backward_graph(self, g):
        # gx_k = sum_{j >= k} g_j exp(a_k - out_j) = exp(a_k - m) revcumsum(g exp(m - out))_k,
        # with m a constant shift (the maximum of a along dim) that keeps both factors finite
        if g.ndim == 0:
            return g
        d = self.dim
        m = _wrap(self.a.max(axis=d, keepdims=True))
        a, out = self.saved_input(0), self.saved_output(0, self.out)
        return (a - m).exp() * (g * (m - out).exp()).flip(d).cumsum(d).flip(d)


@register("logcumsumexp")
def logcumsumexp(input, dim: int) -> Tensor:
    """``log(cumsum(exp(input)))`` along ``dim``, computed stably."""
    if not input.dtype.is_floating_point:
        from .elementwise import _float_arg

        input = _float_arg(input, "logcumsumexp", complex_ok=True)
    return LogCumSumExp.apply(input, dim=wrap_dim(int(dim), input.ndim))


# ---------------------------------------------------------------------------- diff / trace / dist
@register("diff")
def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first)."""
    ops = _ops()
    d = wrap_dim(int(dim), input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = ops.cat(parts, d) if len(parts) > 1 else input
    for _ in range(int(n)):
        size = x.shape[d]
        if size == 0:
            break
        x = ops.narrow(x, d, 1, size - 1) - ops.narrow(x, d, 0, size - 1)
    return x


@register("trace")
def trace(input) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return _ops().diagonal(input).sum()


@register("dist")
def dist(input, other, p: float = 2) -> Tensor:
    """``vector_norm(input - other, p)`` over every element, as one ``DistBackward0`` node."""
    return dist_norm(input - other, p)


# ---------------------------------------------------------------------------- quantile
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, op):
    ops = _ops()
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}() interpolation must be one of {', '.join(_INTERPOLATIONS)}. Got '{interpolation}'")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got {input.dtype}")
    scalar_q = not isinstance(q, Tensor | list | tuple)
    qv = q.array if isinstance(q, Tensor) else q
    qa = np.asarray(qv.get() if hasattr(qv, "get") else qv, dtype=np.float64).reshape(-1)  # q: planned on the host
    if qa.size and ((qa < 0).any() or (qa > 1).any()):
        raise RuntimeError(f"{op}() q values must be in the range [0, 1], got {qa.tolist()}")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else wrap_dim(int(dim), input.ndim)
    n = x.shape[d]
    srt = ops.sort(x, d).values  # NaNs last
    nan = ops.isnan(x)
    if ignore_nan:
        count = (~nan).sum(d, keepdim=True)  # (.., 1, ..)
        last = (count - 1).clamp(min=0)
    else:
        count = None
        last = None
    outs = []
    for qv in qa:
        if ignore_nan:
            rank = last.to(x.dtype) * qv
        else:
            rank = ops.full((1,) * x.ndim, float(qv * (n - 1)), dtype=x.dtype)
        lo = rank.floor()
        hi = rank.ceil()
        if interpolation == "nearest":
            lo = hi = rank.round()
        elif interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        shape = list(srt.shape)
        shape[d] = 1
        lo_i = lo.long().expand(*shape)
        hi_i = hi.long().expand(*shape)
        v_lo = ops.take_along_dim(srt, lo_i, d)
        v_hi = ops.take_along_dim(srt, hi_i, d)
        w = (rank - lo).expand(*shape) if interpolation == "linear" else None
        if interpolation == "linear":
            v = ops.lerp(v_lo, v_hi, w.to(x.dtype))
        elif interpolation == "midpoint":
            v = (v_lo + v_hi) * 0.5
        else:
            v = v_lo
        if ignore_nan:
            v = ops.where(count == 0, float("nan"), v)
        else:
            v = ops.where(nan.any(d, keepdim=True), float("nan"), v)
        if not keepdim:
            v = v.squeeze(d)
        elif dim is None:
            v = v.reshape((1,) * input.ndim)
        outs.append(v)
    return outs[0] if scalar_q else ops.stack(outs, 0)


@register("quantile")
def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """The ``q``-quantiles of ``input`` along ``dim`` (module docstring)."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@register("nanquantile")
def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaNs."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")
