"""``torch.nn.attention.flex_attention``: attention with a user-defined score modification and
a block-sparse mask, as a dense reference implementation.

``flex_attention(q, k, v, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
return_lse=False, kernel_options=None, *, return_aux=None)`` computes, for query ``(B, Hq, L,
E)``, key ``(B, Hkv, S, E)`` and value ``(B, Hkv, S, Ev)``::

    scores = q @ k^T * scale                                 # (B, Hq, L, S)
    scores = score_mod(scores, b, h, q_idx, kv_idx)          # elementwise
    scores[not mask] = -inf                                  # the block mask
    out = softmax(scores) @ v;  lse = logsumexp(scores)

torch calls ``score_mod`` and ``mask_mod`` on scalars under ``vmap``; here they are called once
with broadcast index tensors (``b`` of shape ``(B, 1, 1, 1)``, ``h`` ``(1, H, 1, 1)``, ``q_idx``
``(1, 1, L, 1)``, ``kv_idx`` ``(1, 1, 1, S)``, int64), which gives the same values for the
elementwise functions flex attention is written with (arithmetic, comparisons,
``torch.where``, indexing a bias tensor with the indices). Gradients flow through
``score_mod`` (and into tensors it closes over) by ordinary autograd. A query row that every
key is masked from gets output 0 and lse ``-inf``, as in torch.

The mask: torch's ``BlockMask`` lists, per (batch, head, query block), the key blocks that are
*full* (computed without ``mask_mod``) and *partial* (``mask_mod`` applied); every other block
is skipped. The dense mask here is exactly that: full blocks, plus partial blocks where
``mask_mod`` is True. ``create_block_mask`` builds those lists as torch does (``BLOCK_SIZE``
128 by default, a block whose every element is True is full, the index lists in torch's
order), so ``kv_num_blocks``, ``kv_indices``, ``full_kv_*``, ``q_*``, ``to_dense()`` and
``sparsity()`` agree with torch.

Deviations: there is no fused kernel, so memory is O(L*S) per head, as in torch's own eager
(uncompiled) path, and ``kernel_options`` (torch's Triton tuning knobs, with no effect on
the values) change nothing; ``return_aux=AuxRequest(max_scores=True)`` is refused, as torch
refuses it on CPU; ``BlockMask``'s printout is a one-line summary, not torch's block picture.
Half-precision inputs are computed in float32 and the output cast back (lse stays float32),
as torch does.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from ... import ops as _ops
from ...autograd import Tensor, no_grad
from ...backend import cuda_is_available as _cuda_available
from ...backend import int32

__all__ = ["flex_attention", "create_block_mask", "create_mask", "BlockMask", "and_masks", "or_masks",
           "noop_mask", "AuxRequest", "AuxOutput"]

_LOW_PRECISION = ("float16", "bfloat16")


class AuxRequest(NamedTuple):
    """What ``flex_attention(return_aux=...)`` returns besides the output."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(batch, head, token_q, token_kv):
    """The mask that keeps everything."""
    return _ops.tensor(True)


def _combine(mask_mods, op, empty: bool):
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def mask_mod(b, h, q_idx, kv_idx):
        result = _ops.tensor(empty)
        for m in mask_mods:
            result = op(result, m(b, h, q_idx, kv_idx))
        return result

    return mask_mod


def and_masks(*mask_mods):
    """The mask that keeps what every ``mask_mod`` keeps (none given: everything)."""
    return _combine(mask_mods, lambda a, b: a & b, True)


def or_masks(*mask_mods):
    """The mask that keeps what any ``mask_mod`` keeps (none given: nothing)."""
    return _combine(mask_mods, lambda a, b: a | b, False)


def _indices(B: int, H: int, L: int, S: int):
    """The broadcast index tensors ``b, h, q_idx, kv_idx`` (module docstring)."""
    return (_ops.arange(B).view(B, 1, 1, 1), _ops.arange(H).view(1, H, 1, 1),
            _ops.arange(L).view(1, 1, L, 1), _ops.arange(S).view(1, 1, 1, S))


def _eval_mask(mask_mod, B: int, H: int, L: int, S: int) -> np.ndarray:
    """``mask_mod`` over the whole (B, H, L, S) grid, as a bool array."""
    with no_grad():
        m = mask_mod(*_indices(B, H, L, S))
    arr = m.array if isinstance(m, Tensor) else np.asarray(m)
    return np.broadcast_to(np.asarray(arr).astype(bool), (B, H, L, S))


def _block_lists(blocks: np.ndarray):
    """(num_blocks int32 (..., R), indices int32 (..., R, C)): per row, the columns set in
    ``blocks`` first, then the rest, each in ascending order (torch's stable descending sort)."""
    num = blocks.sum(-1).astype(np.int32)
    idx = np.argsort(~blocks, axis=-1, kind="stable").astype(np.int32)
    return num, idx


def _blocks_from_lists(num: np.ndarray, idx: np.ndarray, n_cols: int) -> np.ndarray:
    """The block-level bool grid that (num, idx) lists."""
    valid = np.arange(idx.shape[-1]) < num[..., None]
    grid = np.zeros(idx.shape[:-1] + (n_cols + 1,), dtype=bool)
    np.put_along_axis(grid, np.where(valid, idx, n_cols).astype(np.int64), True, axis=-1)
    return grid[..., :n_cols]


def _as_int_tensor(a: np.ndarray, device=None) -> Tensor:
    return _ops.tensor(np.ascontiguousarray(a), dtype=int32, device=device) if not isinstance(a, Tensor) else a


def _host(t: Tensor) -> np.ndarray:
    """A block list as a host array (it may live on the GPU)."""
    return t.detach().cpu().numpy()


class BlockMask:
    """torch's block-sparse mask (module docstring). Made by ``create_block_mask`` or
    ``BlockMask.from_kv_blocks``."""

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                 q_num_blocks, q_indices, full_q_num_blocks, full_q_indices, BLOCK_SIZE=(128, 128),
                 mask_mod=None):
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.q_num_blocks = q_num_blocks
        self.q_indices = q_indices
        self.full_q_num_blocks = full_q_num_blocks
        self.full_q_indices = full_q_indices
        self.BLOCK_SIZE = tuple(BLOCK_SIZE) if isinstance(BLOCK_SIZE, (tuple, list)) else (BLOCK_SIZE, BLOCK_SIZE)
        self.mask_mod = mask_mod if mask_mod is not None else noop_mask

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None, full_kv_indices=None,
                       BLOCK_SIZE=128, mask_mod=None, seq_lengths=None, compute_q_blocks: bool = True):
        """A BlockMask from its key-block lists (the query-block lists are derived)."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise RuntimeError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        bs = BLOCK_SIZE if isinstance(BLOCK_SIZE, (tuple, list)) else (BLOCK_SIZE, BLOCK_SIZE)
        n_kv = kv_indices.shape[-1]
        partial = _blocks_from_lists(_host(kv_num_blocks), _host(kv_indices), n_kv)
        full = (_blocks_from_lists(_host(full_kv_num_blocks), _host(full_kv_indices), n_kv)
                if full_kv_num_blocks is not None else None)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * bs[0], n_kv * bs[1])
        q = _q_lists(partial, full, kv_indices.device) if compute_q_blocks else (None,) * 4
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, *q,
                   BLOCK_SIZE=bs, mask_mod=mask_mod)

    @property
    def shape(self):
        return tuple(self.kv_indices.shape[:2]) + self.seq_lengths

    def _blocks(self):
        n_kv = self.kv_indices.shape[-1]
        partial = _blocks_from_lists(_host(self.kv_num_blocks), _host(self.kv_indices), n_kv)
        full = (_blocks_from_lists(_host(self.full_kv_num_blocks), _host(self.full_kv_indices), n_kv)
                if self.full_kv_num_blocks is not None else np.zeros_like(partial))
        return partial, full

    def to_dense(self) -> Tensor:
        """The block-level mask (B, H, Q blocks, KV blocks): 1 where a block is computed."""
        partial, full = self._blocks()
        return _ops.tensor((partial | full).astype(np.int32), device=self.kv_num_blocks.device)

    def sparsity(self) -> float:
        """Percentage of the (B, H, L, S) grid not computed, torch's formula: computed blocks
        times the block area over the unpadded grid (so it is negative when a block is
        larger than the sequence, as torch's is)."""
        partial, full = self._blocks()
        computed = float((partial | full).sum()) * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed / (partial.shape[0] * partial.shape[1] * self._grid_2d()))

    def _grid_2d(self) -> int:
        return self.seq_lengths[0] * self.seq_lengths[1]

    def numel(self) -> int:
        return math.prod(self.shape)

    def as_tuple(self, flatten: bool = True):
        """The attributes in torch's order (``flatten=False``: the lengths and block sizes as
        one pair each). torch's GPU-backward schedule fields (``dq_write_order`` ...) are None."""
        seq = self.seq_lengths if flatten else (self.seq_lengths,)
        block = self.BLOCK_SIZE if flatten else (self.BLOCK_SIZE,)
        return (*seq, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks, self.full_kv_indices,
                self.q_num_blocks, self.q_indices, self.full_q_num_blocks, self.full_q_indices,
                None, None, None, None, *block, self.mask_mod)

    def __getitem__(self, index):
        """Select batches / heads (``block_mask[b]``, ``block_mask[:, h]``), dims kept."""
        if not isinstance(index, tuple):
            index = (index,)
        index = tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)

        def pick(t):
            return None if t is None else t[index]

        return BlockMask.from_kv_blocks(pick(self.kv_num_blocks), pick(self.kv_indices),
                                        pick(self.full_kv_num_blocks), pick(self.full_kv_indices),
                                        BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
                                        seq_lengths=self.seq_lengths)

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%)"

    def dense_mask(self, B: int, H: int) -> np.ndarray:
        """The element-level bool mask (B or 1, H or 1, L, S): full blocks, and partial blocks
        where ``mask_mod`` is True (module docstring)."""
        L, S = self.seq_lengths
        partial, full = self._blocks()
        bq, bk = self.BLOCK_SIZE

        def expand(blocks):
            return np.repeat(np.repeat(blocks, bq, axis=-2), bk, axis=-1)[..., :L, :S]

        mb, mh = partial.shape[:2]
        mod = _eval_mask(self.mask_mod, mb, mh, L, S)
        return expand(full) | (expand(partial) & mod)


def _q_lists(partial: np.ndarray, full: np.ndarray | None, device=None):
    qn, qi = _block_lists(np.swapaxes(partial, -1, -2))
    if full is None:
        return _as_int_tensor(qn, device), _as_int_tensor(qi, device), None, None
    fqn, fqi = _block_lists(np.swapaxes(full, -1, -2))
    return (_as_int_tensor(qn, device), _as_int_tensor(qi, device), _as_int_tensor(fqn, device),
            _as_int_tensor(fqi, device))


def create_mask(mask_mod, B, H, Q_LEN: int, KV_LEN: int, device=None) -> Tensor:
    """``mask_mod`` evaluated over the (B, H, Q_LEN, KV_LEN) grid (B/H None: 1), bool."""
    B, H = B or 1, H or 1
    return _ops.tensor(np.ascontiguousarray(_eval_mask(mask_mod, B, H, Q_LEN, KV_LEN)), device=device)


def create_block_mask(mask_mod, B, H, Q_LEN: int, KV_LEN: int, device=None, BLOCK_SIZE=128,
                      _compile: bool = False, separate_full_blocks: bool = True,
                      compute_dq_write_order: bool = False, dq_kv_order: bool = True) -> BlockMask:
    """torch's ``create_block_mask`` (module docstring). ``B``/``H`` None: 1 (the mask is the
    same for every batch / head); the block lists are made on ``device``. ``_compile`` only
    chooses how torch computes the mask and ``dq_kv_order`` orders torch's fused GPU backward
    (neither changes the mask or the attention); ``compute_dq_write_order`` (that backward's
    schedule tensors) is refused."""
    if compute_dq_write_order:
        raise NotImplementedError("create_block_mask(compute_dq_write_order=True): a schedule for "
                                  "torch's fused GPU backward kernel; shardflow has no such kernel")
    if device is not None and str(device).split(":")[0] not in ("cpu", "cuda"):
        raise ValueError(f"create_block_mask(device={device!r}): expected 'cpu' or 'cuda'")
    if device is not None and str(device).split(":")[0] == "cuda" and not _cuda_available():
        raise RuntimeError(f"create_block_mask(device={device!r}): CUDA is not available here")
    B, H = B or 1, H or 1
    bq, bk = BLOCK_SIZE if isinstance(BLOCK_SIZE, (tuple, list)) else (BLOCK_SIZE, BLOCK_SIZE)
    dense = _eval_mask(mask_mod, B, H, Q_LEN, KV_LEN)
    nq, nk = -(-Q_LEN // bq), -(-KV_LEN // bk)
    padded = np.zeros((B, H, nq * bq, nk * bk), dtype=bool)
    padded[..., :Q_LEN, :KV_LEN] = dense
    tiles = padded.reshape(B, H, nq, bq, nk, bk)
    any_ = tiles.any(axis=(3, 5))
    if separate_full_blocks:
        full = tiles.all(axis=(3, 5))
        partial = any_ & ~full
    else:
        full, partial = None, any_
    kn, ki = _block_lists(partial)
    fkn, fki = _block_lists(full) if full is not None else (None, None)
    mask = BlockMask((Q_LEN, KV_LEN), _as_int_tensor(kn, device), _as_int_tensor(ki, device),
                     None if fkn is None else _as_int_tensor(fkn, device),
                     None if fki is None else _as_int_tensor(fki, device),
                     *_q_lists(partial, full, device), BLOCK_SIZE=(bq, bk), mask_mod=mask_mod)
    return mask


def flex_attention(query: Tensor, key: Tensor, value: Tensor, score_mod=None, block_mask: BlockMask | None = None,
                   scale: float | None = None, enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options=None, *, return_aux: AuxRequest | None = None):
    """torch's ``flex_attention`` (module docstring)."""
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is deprecated, please "
                         "use return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        warnings.warn("return_lse is deprecated and will be removed in v2.10. Please use "
                      "return_aux=AuxRequest(lse=True) instead.", FutureWarning, stacklevel=2)
    if return_aux is not None and return_aux.max_scores:
        raise NotImplementedError("Returning max scores is not supported on CPU/MPS. (shardflow: not built "
                                  "on any device; request AuxRequest(lse=True) only)")
    if kernel_options is not None and not isinstance(kernel_options, dict):
        raise TypeError(f"flex_attention(kernel_options=...): expected a dict, got {type(kernel_options).__name__}")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    B, Hq, L, E = query.shape
    Bk, Hkv, S, _ = key.shape
    if key.shape[-1] != E:
        raise ValueError(f"Expect query and key to have the same embedding dimension but got E={E} and "
                         f"E={key.shape[-1]}.")
    if value.shape[:3] != key.shape[:3]:
        raise ValueError(f"Expect key and value to have the same batch size, heads and length, got "
                         f"{tuple(key.shape)} and {tuple(value.shape)}")
    if Bk != B and Bk != 1:
        raise ValueError(f"Expect query and key/value to have the same batch size, or key/value batch 1, "
                         f"but got Bq={B} and Bkv={Bk}.")
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={Hq} "
                             f"and Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        if Hq % Hkv != 0:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got "
                             f"Hq={Hq} and Hkv={Hkv}.")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    out_dtype = query.dtype
    if str(query.dtype).split(".")[-1] in _LOW_PRECISION:
        query, key, value = query.float(), key.float(), value.float()
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = _ops.matmul(query, key.transpose(-2, -1)) * scale
    b, h, q_idx, kv_idx = _indices(B, Hq, L, S)
    if score_mod is not None:
        scores = score_mod(scores, b, h, q_idx, kv_idx).expand(B, Hq, L, S)
    if block_mask is not None:
        if tuple(block_mask.seq_lengths) != (L, S):
            raise ValueError(
                f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={L} and "
                f"kv_len={S}. Create a new block mask for these lengths (create_block_mask(mask_mod, B, H, "
                f"{L}, {S})).")
        mb, mh = block_mask.kv_indices.shape[:2]
        if mb not in (1, B) or mh not in (1, Hq):
            raise ValueError(f"block_mask has batch/heads ({mb}, {mh}); expected 1 or ({B}, {Hq})")
        keep = _ops.tensor(np.ascontiguousarray(block_mask.dense_mask(B, Hq)), device=scores.device)
        scores = _ops.where(keep, scores, float("-inf"))
    with no_grad():
        m = scores.amax(-1, keepdim=True)
        m = _ops.where(_ops.isfinite(m), m, 0.0)
    p = _ops.exp(scores - m)
    denom = p.sum(-1, keepdim=True)
    has = denom > 0
    out = _ops.matmul(p, value) / _ops.where(has, denom, 1.0)
    out = out.to(out_dtype)
    if not return_lse and (return_aux is None or not return_aux.lse):
        return (out, AuxOutput()) if return_aux is not None else out
    lse = _ops.where(has, _ops.log(_ops.where(has, denom, 1.0)) + m, float("-inf")).squeeze(-1)
    if return_lse:
        return out, lse
    return out, AuxOutput(lse=lse)
