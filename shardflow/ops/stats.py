"""Statistics with PyTorch's names: ``cov``, ``corrcoef``, ``mode``, ``nanmedian``, ``renorm``
(+ ``renorm_``), ``gradient``, ``histogramdd``.

* ``cov(input, correction=1, fweights=None, aweights=None)``: rows are variables, columns
  observations (a 1-D input is one variable). PyTorch's algorithm: weights
  ``w = fweights * aweights``, ``avg = sum(x w) / sum(w)``, normaliser ``sum(w) - correction``
  (``sum(w) - correction * sum(w aweights) / sum(w)`` with ``aweights``; clamped at 0 with
  PyTorch's warning), ``(x - avg) @ ((x - avg) w).T / norm``. A composition of ops, so the
  gradient is theirs.
* ``corrcoef(input)``: ``cov`` divided by the outer product of the standard deviations,
  clamped to [-1, 1] (as PyTorch).
* ``mode(input, dim=-1, keepdim=False)``: ``(values, indices)``: the most frequent value of
  each slice (the smallest on count ties) and the *last* index holding it (PyTorch's CPU
  answer). Found by sorting each slice and measuring runs of equal values; the gradient
  goes to the index.
* ``nanmedian``: the lower median of the non-NaN values (``(k - 1) // 2``-th of the ``k``
  non-NaN values; NaN sorts last); a slice of NaNs gives NaN at index 0. Without ``dim`` the
  gradient is split evenly among elements equal to the median (PyTorch's
  ``evenly_distribute_backward``); with ``dim`` it goes to the index.
* ``renorm(input, p, dim, maxnorm)``: each slice ``input.select(dim, i)`` whose ``p``-norm
  exceeds ``maxnorm`` is scaled by ``maxnorm / (norm + 1e-7)`` (PyTorch's epsilon); the
  scale is differentiated too (PyTorch's ``renorm_backward``).
* ``gradient(input, *, spacing=1, dim=None, edge_order=1)``: second-order central
  differences inside, first- or second-order one-sided differences at the edges (NumPy's
  formulas; ``spacing`` a scalar, a list of scalars or a list of coordinate tensors).
* ``histogramdd(input, bins, *, range=None, weight=None, density=False)``: ``input`` is
  (..., D) points; NumPy's ``histogramdd`` on the host (not differentiable, as PyTorch).
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import CPU, device_of, dtypes, get_array_module, to_device
from ..backend.ufuncs import accumulate
from ._grad_graph import keep_where
from ._util import as_array, inplace, wrap_dim
from .not_differentiable import NotDifferentiable
from .reduce import return_types
from .sort import _selector

__all__ = ["cov", "corrcoef", "mode", "nanmedian", "renorm", "gradient", "histogramdd"]



def _ops():
    from .. import ops

    return ops


# ---------------------------------------------------------------------------- cov / corrcoef
def _weights(name, w, n_obs, integral):
    if w is None:
        return None
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{w.ndim} dimensions")
    if w.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input, but got {w.numel()} != {n_obs}")
    if integral and w.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with {w.dtype} dtype")
    if not integral and not w.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got {name} with "
                           f"{w.dtype} dtype")
    if bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot have negative values")
    return w


@register("cov")
def cov(input, *, correction: int = 1, fweights=None, aweights=None) -> Tensor:
    """Covariance of the rows (variables) over the columns (observations); module docstring."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input  # (V, N)
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.get_default_dtype())
    n_obs = x.shape[1]
    fw = _weights("fweights", fweights, n_obs, True)
    aw = _weights("aweights", aweights, n_obs, False)
    w = fw
    if aw is not None:
        w = aw if w is None else w * aw
    if w is not None:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum  # (V,)
        if correction == 0:
            norm = w_sum
        elif aw is not None:
            norm = w_sum - correction * (w * aw.to(x.dtype)).sum() / w_sum
        else:
            norm = w_sum - correction
        norm_value = float(norm.detach().item())
    else:
        avg = x.mean(1)
        norm = norm_value = n_obs - correction
    if norm_value <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
                      "of observations.", stacklevel=2)
        norm = 0.0 if w is None else norm * 0
    xm = x - avg.unsqueeze(1)  # (V, N)
    c = xm @ (xm if w is None else xm * w).t()  # (V, V)
    return (c / norm).squeeze()


@register("corrcoef")
def corrcoef(input) -> Tensor:
    """Pearson correlation coefficients of the rows (``cov`` normalised, clamped to [-1, 1])."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()  # (V,)
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c.clamp(-1, 1)


# ---------------------------------------------------------------------------- mode / nanmedian
def _sortable(a):
    """``a`` with NaN sorting last: bfloat16 (ml_dtypes) compared as float32."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


@register("mode")
def mode(input, dim: int = -1, keepdim: bool = False):
    """``(values, indices)``: most frequent value per slice (smallest on ties), its last index."""
    a = input.array
    xp = get_array_module(a)
    if a.ndim == 0:
        vals, ind = _selector("Mode").apply(input, xp.zeros((), np.int64), dim=0, keepdim=keepdim)
        return return_types.mode(vals, ind)
    d = wrap_dim(int(dim), a.ndim)
    n = a.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size, got shape {tuple(a.shape)}")
    x = xp.moveaxis(_sortable(a), d, -1)  # (..., n)
    s = xp.sort(x, axis=-1)
    pos = xp.arange(n)
    new_run = xp.concatenate([xp.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]], axis=-1)
    run_start = accumulate("maximum", xp.where(new_run, pos, 0), axis=-1)
    run_len = pos - run_start + 1  # (..., n): count so far within the run
    best = xp.argmax(run_len, axis=-1)[..., None]  # first longest run: the smallest value on ties
    value = xp.take_along_axis(s, best, axis=-1)  # (..., 1)
    last = xp.max(xp.where(x == value, pos, -1), axis=-1, keepdims=True)  # (..., 1)
    idx = xp.moveaxis(last.astype(np.int64), -1, d)
    vals, ind = _selector("Mode").apply(input, idx, dim=d, keepdim=keepdim)
    return return_types.mode(vals, ind)


class _NanMedianAll(Function):
    """Lower median of the non-NaN elements; the gradient is split among equal elements."""

    save_inputs = ()

    def forward(self, a):
        xp = get_array_module(a)
        flat = _sortable(a).reshape(-1)
        k = int(xp.sum(~xp.isnan(flat)))
        out = xp.sort(flat)[max((k - 1) // 2, 0)].reshape(()) if flat.size else xp.asarray(np.nan, flat.dtype)
        self.a, self.out = _sortable(a), out
        return out.astype(a.dtype)

    def backward(self, g):
        xp = get_array_module(g)
        mask = self.a == self.out
        count = max(int(mask.sum()), 1)
        return as_array(xp.where(mask, g / count, 0).astype(g.dtype, copy=False))

    def backward_graph(self, g):
        mask = self.a == self.out  # the tied positions: piecewise constant
        return keep_where(g.expand(*self.a.shape) / max(int(mask.sum()), 1), mask)


@register("nanmedian")
def nanmedian(input, dim=None, keepdim: bool = False):
    """Median ignoring NaN: ``nanmedian(x)`` a 0-d tensor, ``nanmedian(x, dim)`` ``(values, indices)``."""
    if dim is None:
        return _NanMedianAll.apply(input)
    a = input.array
    xp = get_array_module(a)
    if a.ndim == 0:
        vals, ind = _selector("Nanmedian").apply(input, xp.zeros((), np.int64), dim=0, keepdim=keepdim)
        return return_types.nanmedian(vals, ind)
    d = wrap_dim(int(dim), a.ndim)
    if a.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size, got shape "
                         f"{tuple(a.shape)}")
    key = _sortable(a)
    order = xp.argsort(key, axis=d, kind="stable")  # NaN sorts last
    k = xp.sum(~xp.isnan(key), axis=d, keepdims=True)
    rank = xp.maximum((k - 1) // 2, 0)
    idx = xp.take_along_axis(order, rank, axis=d)
    vals, ind = _selector("Nanmedian").apply(input, idx, dim=d, keepdim=keepdim)
    return return_types.nanmedian(vals, ind)


# ---------------------------------------------------------------------------- renorm
def _renorm_factor(input, p, dim, maxnorm, name):
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise RuntimeError(f"{name}: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"{name}: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = wrap_dim(int(dim), input.ndim)
    dims = tuple(i for i in range(input.ndim) if i != d)
    norm = _ops().vector_norm(input, p, dims, keepdim=True)
    return _ops().where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).to(input.dtype)


@register("renorm")
def renorm(input, p, dim: int, maxnorm) -> Tensor:
    """Scale each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` down to ``maxnorm``."""
    return input * _renorm_factor(input, p, dim, maxnorm, "renorm")


@register("renorm_")
def renorm_(input, p, dim: int, maxnorm) -> Tensor:
    return inplace(input, input * _renorm_factor(input, p, dim, maxnorm, "renorm_"))


# ---------------------------------------------------------------------------- gradient
def _diff_along(x, d, coords, h, edge_order):
    """NumPy's ``gradient`` along dim ``d`` of ``x`` (uniform step ``h`` or ``coords``)."""
    ops = _ops()
    n = x.shape[d]

    def sl(a, b):
        return x.narrow(d, a, b - a)

    if coords is None:
        inner = (sl(2, n) - sl(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        else:
            first = (-1.5 * sl(0, 1) + 2.0 * sl(1, 2) - 0.5 * sl(2, 3)) / h
            last = (0.5 * sl(n - 3, n - 2) - 2.0 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) / h
        return ops.cat([first, inner, last], d)
    shape = [1] * x.ndim
    shape[d] = -1

    def c(t):
        return t.reshape(shape)

    dx = coords[1:] - coords[:-1]  # (n - 1,)
    hl, hr = dx[:-1], dx[1:]
    a = -hr / (hl * (hl + hr))
    b = (hr - hl) / (hl * hr)
    cc = hl / (hr * (hl + hr))
    inner = c(a) * sl(0, n - 2) + c(b) * sl(1, n - 1) + c(cc) * sl(2, n)
    if edge_order == 1:
        first = (sl(1, 2) - sl(0, 1)) / c(dx[:1])
        last = (sl(n - 1, n) - sl(n - 2, n - 1)) / c(dx[-1:])
    else:
        d1, d2 = dx[0], dx[1]
        a0 = -(2.0 * d1 + d2) / (d1 * (d1 + d2))
        b0 = (d1 + d2) / (d1 * d2)
        c0 = -d1 / (d2 * (d1 + d2))
        first = a0 * sl(0, 1) + b0 * sl(1, 2) + c0 * sl(2, 3)
        d1, d2 = dx[-2], dx[-1]
        a1 = d2 / (d1 * (d1 + d2))
        b1 = -(d2 + d1) / (d1 * d2)
        c1 = (2.0 * d2 + d1) / (d2 * (d1 + d2))
        last = a1 * sl(n - 3, n - 2) + b1 * sl(n - 2, n - 1) + c1 * sl(n - 1, n)
    return ops.cat([first, inner, last], d)


@register("gradient")
def gradient(input, *, spacing=1, dim=None, edge_order: int = 1):
    """A tuple with the derivative estimate along each of ``dim`` (module docstring)."""
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    if dim is None:
        dims = list(range(input.ndim))
    elif isinstance(dim, int):
        dims = [wrap_dim(dim, input.ndim)]
    else:
        dims = [wrap_dim(int(d), input.ndim) for d in dim]
    if isinstance(spacing, (int, float, Tensor)) and not (isinstance(spacing, Tensor) and spacing.ndim > 0):
        steps = [spacing] * len(dims)
    else:
        steps = list(spacing)
        if len(steps) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                               f"dim arguments to have the same length, but got a spacing argument of length "
                               f"{len(steps)} and a dim argument of length {len(dims)}.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    out = []
    for d, s in zip(dims, steps):
        if isinstance(s, Tensor) and s.ndim == 1:
            if s.shape[0] != x.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and to have "
                                   f"the size of the input along its dim ({x.shape[d]}), got {s.shape[0]}")
            out.append(_diff_along(x, d, s, None, edge_order))  # coefficients in the coordinates' dtype, as PyTorch
        else:
            h = float(s.item()) if isinstance(s, Tensor) else float(s)
            out.append(_diff_along(x, d, None, h, edge_order))
    return tuple(out)


# ---------------------------------------------------------------------------- histogramdd
@register("histogramdd")
def histogramdd(input, bins=10, *, range=None, weight=None, density: bool = False):
    """``(hist, bin_edges)`` of (..., D) points (``bins`` an int, D ints or D edge tensors;
    ``range`` the flat ``[min0, max0, min1, max1, ...]``). In the graph as torch has it
    (``not_differentiable.py``): with int bins the edges come from a node named
    ``_histogramdd_bin_edges`` and the counts from ``_histogramdd_from_bin_cts`` (both on
    ``input`` and ``weight``); with edge tensors the counts come from
    ``_histogramdd_from_bin_tensors`` and the edges returned are those tensors themselves."""
    if input.ndim < 2:
        raise RuntimeError(f"torch.histogramdd: input should have at least 2 dimensions, but got {input.ndim}")
    ndim = input.shape[-1]
    edge_tensors = isinstance(bins, (list, tuple)) and bool(bins) and isinstance(bins[0], Tensor)
    rng = None
    if range is not None:
        r = [float(v) for v in range]
        if len(r) != 2 * ndim:
            raise RuntimeError(f"torch.histogramdd: expected range to have {2 * ndim} elements (a min and a max "
                               f"per dimension), got {len(r)}")
        rng = [(r[2 * i], r[2 * i + 1]) for i in builtins.range(ndim)]
    tensors = [input] + ([weight] if weight is not None else []) + (list(bins) if edge_tensors else [])

    def host_histogram(a, *rest):
        pts = np.asarray(to_device(a, CPU), np.float64).reshape(-1, ndim)
        w = np.asarray(to_device(rest[0], CPU), np.float64).reshape(-1) if weight is not None else None
        b = [np.asarray(to_device(e, CPU), np.float64) for e in rest[weight is not None:]] if edge_tensors else bins
        return np.histogramdd(pts, bins=b, range=rng, weights=w, density=density)

    def on_device(x, a):
        return to_device(np.asarray(x, to_device(a, CPU).dtype), device_of(a))

    def counts(*arrays):
        return on_device(host_histogram(*arrays)[0], arrays[0])

    if edge_tensors:
        hist = NotDifferentiable.apply(*tensors, forward_fn=counts, name="_histogramdd_from_bin_tensors")
        return return_types.histogramdd(hist, tuple(bins))

    def edges(*arrays):
        return tuple(on_device(e, arrays[0]) for e in host_histogram(*arrays)[1])

    bin_edges = NotDifferentiable.apply(*tensors, forward_fn=edges, name="_histogramdd_bin_edges")
    hist = NotDifferentiable.apply(*tensors, forward_fn=counts, name="_histogramdd_from_bin_cts")
    return return_types.histogramdd(hist, tuple(bin_edges) if isinstance(bin_edges, (tuple, list)) else (bin_edges,))

