"""More indexed writes with PyTorch's names: ``index_copy``, ``scatter_reduce``,
``masked_scatter`` (each with its in-place form) and ``fill_diagonal_``.

* ``index_copy(input, dim, index, source)``: slices of ``input`` along ``dim`` replaced by
  ``source``'s. Backward: ``input`` gets ``g`` with the replaced slices zeroed, ``source`` the
  replaced slices of ``g``.
* ``scatter_reduce(input, dim, index, src, reduce, include_self=True)`` with ``reduce`` one of
  ``sum``, ``prod``, ``mean``, ``amax``, ``amin``: every ``src[i]`` is folded into
  ``out[... index[i] ...]`` (the positions that receive something start from ``input``, or
  from the reduction's identity without ``include_self``; ``mean`` divides by the number of
  values folded, ``input`` included). Gradients, as PyTorch: ``sum`` passes ``g``;
  ``mean`` ``g / count``; ``amax``/``amin`` share ``g`` evenly between all values equal to the
  result; ``prod`` gives each value the product of the others (``out / value``, or with a
  zero among them the product of the non-zeros, exactly).
* ``masked_scatter(input, mask, source)``: where ``mask`` (broadcast to ``input``) is True,
  the next elements of ``source`` in order. Backward: ``input`` gets ``g`` off the mask,
  ``source``'s first ``mask.sum()`` elements ``g`` on the mask.
* ``fill_diagonal_(value, wrap=False)``: the main diagonal of a 2-D tensor (or of all-equal
  dims), NumPy's ``fill_diagonal``; the filled positions get no gradient.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..autograd.higher_order import first_order_only
from ..backend import get_array_module
from ..backend.ufuncs import multiply_at, scatter_at
from . import _grad_graph as _gg
from ._util import wrap_dim
from .index import (
    Index,
    IndexPut,
    IndexSelect,
    _add_at,
    _check_bounds,
    _check_gather_shapes,
    _grid_index,
    _index_add_args,
    _int_index,
    _run_inplace,
    _to_input_device,
    _to_xp,
    gathered,
    zero_padded,
)

__all__ = ["index_copy", "index_copy_", "scatter_reduce", "scatter_reduce_", "masked_scatter", "masked_scatter_",
           "fill_diagonal_"]


# ---------------------------------------------------------------------------- index_copy
class IndexCopy(Function):
    save_inputs = ()

    def forward(self, a, src, index=None, dim=0, inplace=False):
        xp = get_array_module(a)
        self.index, self.dim = index, dim
        out = a if inplace else a.copy()
        xp.moveaxis(out, dim, 0)[index] = xp.moveaxis(src, dim, 0)
        return out

    def backward(self, g):
        xp = get_array_module(g)
        ga = gs = None
        if self.needs_input_grad[0]:
            ga = g.copy()
            xp.moveaxis(ga, self.dim, 0)[self.index] = 0
        if self.needs_input_grad[1]:
            gs = xp.take(g, self.index, axis=self.dim)
        return ga, gs

    def backward_graph(self, g):
        ga = gs = None
        if self.needs_input_grad[0]:  # g with the replaced slices zeroed
            ga = IndexPut.apply(g, 0.0, idx=(slice(None),) * self.dim + (self.index, Ellipsis))
        if self.needs_input_grad[1]:
            gs = IndexSelect.apply(g, index=self.index, dim=self.dim)
        return ga, gs


@register("index_copy")
def index_copy(input: Tensor, dim: int, index, source) -> Tensor:
    """``input`` with its slices ``index`` along ``dim`` replaced by ``source``'s."""
    idx, d, source = _index_add_args("index_copy", input, dim, index, source)
    return IndexCopy.apply(input, source, index=idx, dim=d)


@register("index_copy_")
def index_copy_(input: Tensor, dim: int, index, source) -> Tensor:
    idx, d, source = _index_add_args("index_copy_", input, dim, index, source)
    return _run_inplace(input, "index_copy_", IndexCopy, source, index=idx, dim=d)


# ---------------------------------------------------------------------------- scatter_reduce
_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    lo_hi = (np.finfo(dtype) if dtype.kind in "fV" else np.iinfo(dtype)) if dtype.kind != "V" else np.finfo(np.float32)
    if dtype.kind in "fV":
        return -np.inf if reduce == "amax" else np.inf
    return lo_hi.min if reduce == "amax" else lo_hi.max


class ScatterReduce(Function):
    save_inputs = None

    def forward(self, a, src, index=None, dim=0, reduce="sum", include_self=True, inplace=False):
        xp = get_array_module(a)
        grid = _grid_index(index, dim)
        sl = tuple(slice(0, s) for s in index.shape)
        val = src[sl]
        hit = xp.zeros(a.shape, bool)
        hit[grid] = True
        count = xp.zeros(a.shape, np.int64)
        _add_at(count, grid, 1)
        a_in = a.copy() if inplace else a
        out = a if inplace else a.copy()
        if not include_self:
            out[hit] = _identity(reduce, a.dtype)
        ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
        if ufunc is xp.add:
            _add_at(out, grid, val)
        elif ufunc is xp.multiply:
            multiply_at(out, grid, val)  # CuPy has no multiply.at
        else:
            scatter_at({"amax": "maximum", "amin": "minimum"}[reduce], out, grid, val)
        if reduce == "mean":
            denom = count + (1 if include_self else 0)
            scale = xp.where(hit, xp.maximum(denom, 1), 1)
            out[...] = out / scale.astype(out.dtype) if out.dtype.kind in "fV" else out // scale
        self.grid, self.sl, self.hit, self.count = grid, sl, hit, count
        self.a, self.val, self.out, self.src_shape = a_in, val, out.copy() if inplace else out, src.shape
        self.src = src  # for saved_input (backward_graph of prod)
        self.reduce, self.include_self = reduce, include_self
        return out

    def backward(self, g):
        xp = get_array_module(g)
        grid, hit, reduce, inc = self.grid, self.hit, self.reduce, self.include_self
        a, val, out = self.a, self.val, self.out
        g_at = g[grid]  # the output gradient each src value sees
        if reduce == "sum":
            ga, gv = g * (~hit | inc), g_at
        elif reduce == "mean":
            n = xp.maximum(self.count + (1 if inc else 0), 1).astype(g.dtype)
            ga = xp.where(hit, g / n if inc else 0, g)
            gv = (g / n)[grid]
        elif reduce in ("amax", "amin"):
            ties = xp.zeros(a.shape, g.dtype)
            _add_at(ties, grid, (val == out[grid]).astype(g.dtype))
            self_tie = (a == out) & hit & inc
            ties = ties + self_tie
            share = g / xp.maximum(ties, 1)
            ga = xp.where(hit, share * self_tie, g)
            gv = share[grid] * (val == out[grid])
        else:  # prod: the product of the others, exactly when there are zeros
            zeros = xp.zeros(a.shape, np.int64)
            _add_at(zeros, grid, (val == 0).astype(np.int64))
            zeros = zeros + ((a == 0) & hit & inc)
            nonzero_prod = xp.where(hit & inc & (a != 0), a, xp.ones_like(a))
            multiply_at(nonzero_prod, grid, xp.where(val == 0, 1, val))

            def others(v, z_count, nz_prod, o):
                return xp.where(v == 0, xp.where(z_count == 1, nz_prod, 0), xp.where(z_count == 0, o / xp.where(v == 0, 1, v), 0))

            ga = xp.where(hit, g * others(a, zeros, nonzero_prod, out) * inc, g)
            gv = g_at * others(val, zeros[grid], nonzero_prod[grid], out[grid])
        gs = None
        if self.needs_input_grad[1]:
            gs = xp.zeros(self.src_shape, g.dtype)
            gs[self.sl] = gv
        return (ga.astype(g.dtype, copy=False) if self.needs_input_grad[0] else None), gs

    def backward_graph(self, g):
        """``backward`` with Tensors. sum / mean / amax / amin are linear in ``g`` with
        piecewise-constant coefficients (the hit mask, the counts, the ties: constants, as in
        torch); prod's ``out / value`` reads the saved input, src and output so it is
        differentiated again (with a zero among the folded values it stays first order)."""
        xp = get_array_module(g.array)
        grid, hit, reduce, inc = self.grid, self.hit, self.reduce, self.include_self
        a, val, out = self.a, self.val, self.out
        if reduce == "sum":
            ga = g if inc else _gg.keep_where(g, ~hit)
            gv = gathered(g, grid)
        elif reduce == "mean":
            n = xp.maximum(self.count + (1 if inc else 0), 1)
            ga = g * _gg.const(xp.where(hit, 1.0 / n if inc else 0.0, 1.0), g)
            gv = gathered(g * _gg.const(1.0 / n, g), grid)
        elif reduce in ("amax", "amin"):
            hits = (val == out[grid])
            ties = xp.zeros(a.shape, np.int64)
            _add_at(ties, grid, hits.astype(np.int64))
            self_tie = (a == out) & hit & inc
            ties = xp.maximum(ties + self_tie, 1)
            ga = g * _gg.const(xp.where(hit, self_tie / ties, 1.0), g)
            gv = gathered(g * _gg.const(1.0 / ties, g), grid) * _gg.const(hits, g)
        else:  # prod
            if bool((val == 0).any()) or bool(((a == 0) & hit & inc).any()):
                return first_order_only(self, g)
            out_t = self.saved_output(0, self.out)
            ga = None
            if self.needs_input_grad[0]:
                if inc:  # a where it is folded in (1 elsewhere, so off-hit zeros stay finite)
                    where, hit_t = _gg.op("where"), _wrap(hit)
                    ga = g * where(hit_t, out_t / where(hit_t, self.saved_input(0, self.a), 1.0), 1.0)
                else:
                    ga = _gg.keep_where(g, ~hit)
            gv = gathered(g * out_t, grid) / Index.apply(self.saved_input(1, self.src), idx=self.sl)
            gs = zero_padded(gv, self.src_shape, self.sl) if self.needs_input_grad[1] else None
            return ga, gs
        gs = zero_padded(gv, self.src_shape, self.sl) if self.needs_input_grad[1] else None
        return (ga if self.needs_input_grad[0] else None), gs


class ScatterReduceInplace(ScatterReduce):
    """``scatter_reduce_``: ``forward`` keeps a copy of the input's values before it writes
    (``a_in``), so the backward reads no array the write changes and only ``src`` is
    version-checked. With every input checked (``ScatterReduce``'s ``save_inputs``), the
    op's own write to its input made every backward through it fail with "modified by an
    inplace operation" (PyG's ``scatter(..., reduce='max')``:
    ``src.new_zeros(size).scatter_reduce_(..., include_self=False)``)."""

    save_inputs = (1,)
    torch_name = "ScatterReduceBackward0"


def _scatter_reduce_args(op, input, dim, index, src, reduce):
    if reduce not in _REDUCES:
        raise RuntimeError(f"{op}(): reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    a = input.array
    xp = get_array_module(a)
    idx = _int_index(index, op, xp)
    d = wrap_dim(dim, a.ndim)
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): src must be a Tensor, got {type(src).__name__}")
    src = _to_input_device(src, input)
    if src.array.dtype != a.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype: got {input.dtype} and {src.dtype}")
    _check_gather_shapes(op, a.shape, idx.shape, d, src.array.shape)
    _check_bounds(idx, a.shape[d], d, allow_negative=False, error=RuntimeError)
    return _to_xp(idx, xp), d, src


@register("scatter_reduce")
def scatter_reduce(input: Tensor, dim: int, index, src, reduce: str, *, include_self: bool = True) -> Tensor:
    """Fold ``src`` into ``input`` at ``index`` along ``dim`` with ``reduce`` (module docstring)."""
    idx, d, src = _scatter_reduce_args("scatter_reduce", input, dim, index, src, reduce)
    return ScatterReduce.apply(input, src, index=idx, dim=d, reduce=reduce, include_self=include_self)


@register("scatter_reduce_")
def scatter_reduce_(input: Tensor, dim: int, index, src, reduce: str, *, include_self: bool = True) -> Tensor:
    idx, d, src = _scatter_reduce_args("scatter_reduce_", input, dim, index, src, reduce)
    return _run_inplace(input, "scatter_reduce_", ScatterReduceInplace, src, index=idx, dim=d, reduce=reduce,
                        include_self=include_self)


# ---------------------------------------------------------------------------- masked_scatter
class MaskedScatter(Function):
    save_inputs = ()

    def forward(self, a, src, mask=None, inplace=False):
        self.mask, self.src_shape = mask, src.shape
        k = int(mask.sum())
        if k > src.size:
            raise RuntimeError(f"masked_scatter: expected source to have at least {k} elements (the number of "
                               f"True entries of the mask), got {src.size}")
        out = a if inplace else a.copy()
        out[mask] = src.reshape(-1)[:k]
        self.k = k
        return out

    def backward(self, g):
        xp = get_array_module(g)
        ga = xp.where(self.mask, 0, g).astype(g.dtype, copy=False) if self.needs_input_grad[0] else None
        gs = None
        if self.needs_input_grad[1]:
            flat = xp.zeros(int(np.prod(self.src_shape)), g.dtype)
            flat[:self.k] = g[self.mask]
            gs = flat.reshape(self.src_shape)
        return ga, gs

    def backward_graph(self, g):
        ga = _gg.keep_where(g, ~self.mask) if self.needs_input_grad[0] else None
        gs = None
        if self.needs_input_grad[1]:  # g on the mask, in order, then zeros
            size = int(np.prod(self.src_shape))
            picked = Index.apply(g, idx=(self.mask,), unique=True, add_idx=(self.mask,))
            gs = zero_padded(picked, (size,), (slice(0, self.k),)).reshape(self.src_shape)
        return ga, gs


def _mask_args(op, input, mask, source):
    m = mask.array if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise RuntimeError(f"{op}: expected BoolTensor for mask, got {m.dtype}")
    xp = get_array_module(input.array)
    m = xp.broadcast_to(_to_xp(m, xp), input.shape)
    source = _to_input_device(source, input)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}: expected self and source to have same dtypes but got {input.dtype} and {source.dtype}")
    return m, source


@register("masked_scatter")
def masked_scatter(input: Tensor, mask, source: Tensor) -> Tensor:
    """``input`` with the masked positions filled by ``source``'s elements in order."""
    m, source = _mask_args("masked_scatter", input, mask, source)
    return MaskedScatter.apply(input, source, mask=m)


@register("masked_scatter_")
def masked_scatter_(input: Tensor, mask, source: Tensor) -> Tensor:
    m, source = _mask_args("masked_scatter_", input, mask, source)
    return _run_inplace(input, "masked_scatter_", MaskedScatter, source, mask=m)


# ---------------------------------------------------------------------------- fill_diagonal_
class FillDiagonal(Function):
    save_inputs = ()

    def forward(self, a, value=0.0, wrap=False, inplace=False):
        xp = get_array_module(a)
        out = a if inplace else a.copy()
        self.pos = np.zeros(a.shape, bool)
        np.fill_diagonal(self.pos, True, wrap=wrap)
        self.pos = _to_xp(self.pos, xp)
        out[self.pos] = value
        return out

    def backward(self, g):
        return get_array_module(g).where(self.pos, 0, g).astype(g.dtype, copy=False)

    def backward_graph(self, g):
        return _gg.keep_where(g, ~self.pos)


@register("fill_diagonal_")
def fill_diagonal_(input: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place (a 2-D tensor, or all dims of equal length)."""
    if input.ndim < 2 or (input.ndim > 2 and len(set(input.shape)) != 1):
        raise RuntimeError("fill_diagonal_: dimensions must larger than 1 and all dimensions of input must be of "
                           f"equal length, got shape {tuple(input.shape)}")
    return _run_inplace(input, "fill_diagonal_", FillDiagonal, value=float(fill_value), wrap=wrap)
