"""``embedding_bag``: sums, means or maxima of bags of embedding rows, without building the
``(n, D)`` matrix of looked-up rows per entry in user code (``nn.EmbeddingBag``).

Bags: a 2-D ``input`` ``(B, N)`` is ``B`` bags of ``N`` indices; a 1-D ``input`` is cut by
``offsets`` (bag ``b`` is ``input[offsets[b]:offsets[b + 1]]``, the last bag runs to the end,
or, with ``include_last_offset``, ``offsets`` has ``B + 1`` entries and ends with
``len(input)``: the CSR format). Entries equal to ``padding_idx`` take
no part: they are not summed, not counted in a mean, get no gradient. An empty bag gives
zeros.

Algorithm: the bags are laid out as a dense ``(B, L)`` table of entry positions (``L`` the
longest bag; empty slots and padding entries masked), the rows are gathered once into
``(B, L, D)``, and the bag reduction is a masked ``einsum`` (sum/mean, with
``per_sample_weights`` folded into the coefficients) or a masked ``max`` over ``L`` whose
arg-max is kept. Backward scatters ``g`` back with ``add.at``: each entry's coefficient
times its bag's gradient (sum/mean), or each bag's gradient into the arg-max row per
feature (max); ``per_sample_weights`` get ``<g_bag, weight[row]>``. ``scale_grad_by_freq``
divides each entry's gradient by its index's count in ``input`` (the true frequency, as
PyTorch's CUDA kernel and ``embedding``; PyTorch 2.13's CPU kernel divides some rows by
another index's count, pytorch/pytorch#190063). Half-precision weights are reduced in
float32 and rounded once.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..autograd.sparse_grad import rows_of
from ..backend import get_array_module
from .index import (
    Index,
    IndexPut,
    _add_at,
    _check_bounds,
    _int_index,
    _to_xp,
    renorm_rows_,
    sparse_grad_wanted,
)

__all__ = ["embedding_bag"]

_MODES = ("sum", "mean", "max")


def _host(a) -> np.ndarray:
    """A NumPy copy of an index array: bags are planned on the host (CuPy's arrays: .get())."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _up(a):
    return (a.astype(np.float32), a.dtype) if a.dtype.itemsize < 4 else (a, None)


class EmbeddingBag(Function):
    """``(weight (V, D), per_sample_weights (n,) or None) -> (B, D)``; see the module docstring."""

    def forward(self, w, psw=None, *, ids, pos, mask, mode, freq, sparse=False):
        # ids, pos, mask: (B, L) row index, entry position (-1: none) and "takes part" per slot
        self.ids, self.pos, self.mask, self.mode, self.freq = ids, pos, mask, mode, freq
        self.sparse = sparse  # (refused with mode="max", as torch)
        self.w_shape, self.n = w.shape, None if psw is None else psw.shape[0]
        self.w = None if psw is None else w  # read by the per_sample_weights gradient
        self.psw = psw  # read by backward_graph (the coefficients depend on it)
        xp = get_array_module(w)
        wa, dt = _up(w)
        rows = wa[ids]  # (B, L, D)
        if mode == "max":
            rows = xp.where(mask[..., None], rows, -xp.inf)
            self.arg = rows.argmax(axis=1)  # (B, D)
            self.nonempty = mask.any(axis=1)
            out = xp.take_along_axis(rows, self.arg[:, None, :], axis=1)[:, 0]
            out = xp.where(self.nonempty[:, None], out, 0)
        else:
            coef = mask.astype(wa.dtype)  # (B, L)
            if psw is not None:
                if psw.size:  # (no indices at all: every slot is masked, nothing to read)
                    coef = coef * _up(psw)[0][xp.maximum(pos, 0)]
            if mode == "mean":
                coef = coef / xp.maximum(mask.sum(axis=1, keepdims=True), 1).astype(wa.dtype)
            self.coef = coef
            out = xp.einsum("bl,bld->bd", coef, rows)
        self.dt = dt
        return out if dt is None else out.astype(dt)

    def backward(self, g):
        xp = get_array_module(g)
        ga, _ = _up(g)
        ids, mask = self.ids, self.mask
        gw = None
        if self.needs_input_grad[0]:
            acc = None
            if self.mode == "max":
                acc = xp.zeros(self.w_shape, ga.dtype)
                ne = self.nonempty
                rows = xp.take_along_axis(ids, self.arg, axis=1)  # (B, D): the arg-max row per feature
                cols = xp.broadcast_to(xp.arange(self.w_shape[1]), rows.shape)
                _add_at(acc, (rows[ne], cols[ne]), ga[ne])
            else:
                coef = self.coef
                if self.freq is not None:
                    coef = coef / self.freq[ids].astype(ga.dtype)
                contrib = coef[..., None] * ga[:, None, :]  # (B, L, D)
                if self.sparse and sparse_grad_wanted(self._edges[0]):  # the rows used, sparse
                    vals = contrib[mask]
                    gw = rows_of(ids[mask], vals if self.dt is None else vals.astype(self.dt), self.w_shape)
                    return gw, self._psw_grad(ga, ids, mask, xp)
                acc = xp.zeros(self.w_shape, ga.dtype)
                _add_at(acc, ids[mask], contrib[mask])
            gw = acc if self.dt is None else acc.astype(self.dt)
        return gw, self._psw_grad(ga, ids, mask, xp)

    def _psw_grad(self, ga, ids, mask, xp):
        gpsw = None
        if self.n is not None and self.needs_input_grad[1]:
            wa = _up(self.w)[0]
            dots = xp.einsum("bld,bd->bl", wa[ids], ga)
            if self.mode == "mean":  # per_sample_weights are refused for mean/max; kept general
                dots = dots / xp.maximum(mask.sum(axis=1, keepdims=True), 1)
            acc = xp.zeros(self.n, ga.dtype)
            acc[self.pos[mask]] = dots[mask]
            gpsw = acc if self.dt is None else acc.astype(self.dt)
        return gpsw

    def backward_graph(self, g):
        """``backward`` with Tensors, in the weight's dtype: the weight gradient is an
        accumulating write of ``g`` (times the coefficients, which hold
        ``per_sample_weights`` as a Tensor) into zeros; the ``per_sample_weights`` gradient
        gathers the rows (as a Tensor) and writes the dots at the entry positions. Masks,
        counts, frequencies and max's arg-max are constants."""
        xp = get_array_module(g.array)
        ids, mask, dtype = self.ids, self.mask, g.array.dtype
        gw = gpsw = None
        if self.needs_input_grad[0]:
            zeros = _wrap(xp.zeros(self.w_shape, dtype))
            if self.mode == "max":
                ne = self.nonempty
                rows = xp.take_along_axis(ids, self.arg, axis=1)  # (B, D)
                cols = xp.broadcast_to(xp.arange(self.w_shape[1]), rows.shape)
                at = (rows[ne], cols[ne])
                g_ne = Index.apply(g, idx=(ne,), unique=True, add_idx=(ne,))
                gw = IndexPut.apply(zeros, g_ne, idx=at, accumulate=True, add_idx=at)
            else:
                scale = 1.0 if self.freq is None else 1.0 / self.freq[ids]  # (B, L)
                coef = _wrap((self.coef * scale).astype(dtype))
                if self.psw is not None:  # coef = mask * psw[pos] (sum mode): psw as a Tensor
                    at = (xp.maximum(self.pos, 0),)
                    psw_at = Index.apply(self.saved_input(1, self.psw), idx=at, unique=False, add_idx=at)
                    coef = _wrap((mask * scale).astype(dtype)) * psw_at
                contrib = coef.unsqueeze(-1) * g.unsqueeze(1)  # (B, L, D)
                picked = Index.apply(contrib, idx=(mask,), unique=True, add_idx=(mask,))  # (k, D)
                at = (ids[mask],)
                gw = IndexPut.apply(zeros, picked, idx=at, accumulate=True, add_idx=at)
        if self.n is not None and self.needs_input_grad[1]:
            w_t = self.saved_input(0, self.w)
            rows = Index.apply(w_t, idx=(ids,), unique=False, add_idx=(ids,))  # (B, L, D)
            dots = (rows * g.unsqueeze(1)).sum(-1)  # (B, L)
            if self.mode == "mean":
                dots = dots / _wrap(xp.maximum(mask.sum(axis=1, keepdims=True), 1).astype(dtype))
            picked = Index.apply(dots, idx=(mask,), unique=True, add_idx=(mask,))
            gpsw = IndexPut.apply(_wrap(xp.zeros(self.n, dtype)), picked, idx=(self.pos[mask],))
        return gw, gpsw


def _bag_layout(ids, offsets, include_last_offset: bool, op: str):
    """``(pos, B, L)``: the ``(B, L)`` table of flat entry positions (-1 for empty slots)."""
    n = ids.shape[0]
    if offsets is None:
        raise ValueError(f"{op}: offsets has to be a 1D Tensor but got None (1-D input needs offsets)")
    off = _host(offsets.array if isinstance(offsets, Tensor) else offsets).astype(np.int64).reshape(-1)
    if off.ndim != 1 or off.size == 0:
        raise ValueError(f"{op}: offsets has to be a 1D Tensor with at least one entry, got shape {off.shape}")
    if off[0] != 0:
        raise RuntimeError(f"{op}: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {int(off[0])}")
    if (np.diff(off) < 0).any() or off[-1] > n:
        raise RuntimeError(
            f"{op}: offsets must be non-decreasing and at most the number of indices ({n}), got {off.tolist()}"
        )
    if include_last_offset and off[-1] != n:
        raise ValueError(
            f"{op}: with include_last_offset=True the last offset is the end of the last bag and must "
            f"equal the number of indices ({n}, the CSR format), got {int(off[-1])}; PyTorch's result for "
            "trailing indices depends on the mode and padding_idx, so they are refused here"
        )
    ends = np.append(off[1:], n) if not include_last_offset else off[1:]
    starts = off if not include_last_offset else off[:-1]
    sizes = ends - starts
    B, L = len(starts), max(int(sizes.max()) if sizes.size else 0, 1)
    pos = np.full((B, L), -1, np.int64)
    bag_of = np.repeat(np.arange(B), sizes)
    entries = np.concatenate([np.arange(s, e) for s, e in zip(starts, ends)]) if B else np.zeros(0, np.int64)
    pos[bag_of, entries - starts[bag_of]] = entries
    return pos


@register("embedding_bag")
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights=None, include_last_offset: bool = False,
                  padding_idx=None) -> Tensor:
    """``F.embedding_bag``: ``(B, D)`` reductions of bags of rows of ``weight`` (module docstring)."""
    op = "embedding_bag"
    if mode not in _MODES:
        raise ValueError(f"{op}: mode has to be one of sum, mean or max, got {mode!r}")
    if isinstance(weight, Tensor) and weight.array.dtype.kind in "iu" and isinstance(input, Tensor):
        input, weight = weight, input  # torch.embedding_bag's order (weight, indices)
    w = weight.array
    if w.ndim != 2:
        raise ValueError(f"{op}: weight has to be a 2D Tensor (num_embeddings, embedding_dim), got shape {tuple(w.shape)}")
    xp = get_array_module(w)
    ids = _int_index(input, op, xp)
    V = w.shape[0]
    if ids.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{op}: if input is 2D, then offsets has to be None, as input is treated as a "
                             "mini-batch of fixed length sequences")
        B, N = ids.shape
        pos = np.arange(B * N, dtype=np.int64).reshape(B, max(N, 0))
        if N == 0:
            pos = np.full((B, 1), -1, np.int64)
        ids = ids.reshape(-1)
    elif ids.ndim == 1:
        pos = _bag_layout(ids, offsets, include_last_offset, op)
    else:
        raise ValueError(f"{op}: input has to be 1D or 2D Tensor, but got Tensor of dimension {ids.ndim}")
    _check_bounds(ids, V, 0, allow_negative=False, error=RuntimeError)
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise ValueError(f"{op}: padding_idx must be within num_embeddings ({V}), got {padding_idx}")
        padding_idx = padding_idx + V if padding_idx < 0 else padding_idx
    if sparse and mode == "max":  # torch's F.embedding_bag check
        raise ValueError("max mode does not support sparse weights (use mode='sum' or 'mean', or sparse=False)")
    if scale_grad_by_freq and mode == "max":
        raise ValueError(f"{op}: max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"{op}: per_sample_weights was not None. per_sample_weights is only supported for "
                f"mode='sum' (got mode='{mode}'); use mode='sum' or multiply the rows yourself"
            )
        if tuple(per_sample_weights.shape) != tuple(np.shape(input.array if isinstance(input, Tensor) else input)):
            raise ValueError(
                f"{op}: per_sample_weights must have the shape of input {tuple(np.shape(input))}, got "
                f"{tuple(per_sample_weights.shape)}"
            )
        per_sample_weights = per_sample_weights.reshape(-1)
    ids_host = _host(ids).astype(np.int64)
    # (B, L); no indices at all (every bag empty): nothing to read, every slot masked
    dense = ids_host[np.maximum(pos, 0)] if ids_host.size else np.zeros(pos.shape, np.int64)
    mask = pos >= 0
    if padding_idx is not None:
        mask &= dense != padding_idx
    freq = np.bincount(ids_host, minlength=V) if scale_grad_by_freq else None
    if max_norm is not None:
        renorm_rows_(weight, _to_xp(ids_host, xp), max_norm, norm_type)
    return EmbeddingBag.apply(
        weight, per_sample_weights, ids=_to_xp(dense, xp), pos=_to_xp(pos, xp), mask=_to_xp(mask, xp),
        mode=mode, freq=None if freq is None else _to_xp(freq, xp), sparse=bool(sparse),
    )
