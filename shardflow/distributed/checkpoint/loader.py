"""``load(state_dict, checkpoint_id=path)``: fill ``state_dict`` in place, resharding on the fly.

The target layout is the one of the tensors passed in: a global tensor receives its shard
under its own placement and sbp, a plain tensor the whole value. The saving job's world
size and layout do not matter (DP 4 -> 2 -> 3, ZeRO-3 shards -> whole tensors, TP 2 -> 1,
1 -> N): the index records every saved piece as a box of the logical tensor.

Algorithm (a collective over the group; the checkpoint folder must be visible to every rank):

1. Read and verify ``index.json`` (missing: the folder was never committed — a clear error,
   a half-written index is a temp file and never looked at).
2. *Plan.* For each leaf of ``state_dict``: its entry in the index (missing key, tensor vs
   value, logical shape mismatch are errors); the boxes this rank holds of the target
   (``regions.local_boxes``); for each box and each saved piece, their intersection.
   Errors are exchanged (``all_gather_object`` #1) so that every rank raises the same one
   before any read.
3. *Read* the intersections only: for each, the contiguous byte ranges it occupies in the
   C-order piece, widened to whole CRC-32 blocks, each block read once and verified
   (``FileSystemReader.read_window``). Values go to new arrays, not yet into the targets.
   Errors (a corrupt or missing file) are exchanged again (#2).
4. *Commit*: copy into the target tensors (``.array[...] =``, cast to the target's dtype,
   version bumped) and replace non-tensor leaves in their dicts. So a failed load leaves
   every rank's state untouched.

Target ``P`` dimensions: coordinate 0 receives the value, the others zeros.
Communication: two ``all_gather_object`` of error strings; no tensor bytes.
"""

from __future__ import annotations

import numpy as np

from ... import comm as _comm
from ...backend.xp import get_array_module
from . import exchange
from .filesystem import FileSystemReader, dtype_of
from .hf_storage import HuggingFaceStorageReader, load_hf
from .metadata import CheckpointError, CheckpointException, decode_object, flatten
from .planner import load_options
from .regions import intersect, local_boxes, partial_zero, spec_of
from .single_process import note_single_process
from .stateful import Stateful, stateful_to_state_dict
from .storage_check import check_storage

__all__ = ["load"]


def _is_tensor(v) -> bool:
    return hasattr(v, "array") or isinstance(v, np.ndarray)


def _names(d, n=6) -> str:
    ks = sorted(d)
    return ", ".join(ks[:n]) + (f" ... ({len(ks)} in all)" if len(ks) > n else "")


def _plan(flat, index, label: str, allow_partial_load: bool = False):
    """``(tensor_plans, object_values)``; tensor plans are (name, leaf, local shape, reads).
    ``allow_partial_load``: a key the checkpoint lacks altogether is skipped (left as is)."""
    tensors, objects = index["tensors"], index["objects"]
    tplans, ovals = [], []
    for name, (path, leaf) in flat.items():
        if allow_partial_load and name not in tensors and name not in objects:
            continue
        if _is_tensor(leaf):
            if name not in tensors:
                where = "a value, not a tensor" if name in objects else "missing"
                raise CheckpointError(
                    f"{label}: tensor {name!r} of the state dict is {where} in the checkpoint "
                    f"(its tensors: {_names(tensors)}); load into a state dict with the saved "
                    "keys (get_state_dict(model, optimizer) for model + optimizer)"
                )
            e = tensors[name]
            spec = spec_of(leaf)
            arr = leaf if isinstance(leaf, np.ndarray) else leaf.array
            shape = tuple(spec.shape) if spec is not None else tuple(arr.shape)
            if shape != tuple(e["shape"]):
                raise CheckpointError(
                    f"{label}: tensor {name!r} was saved with shape {tuple(e['shape'])}, the "
                    f"state dict's tensor has shape {shape}; build the model with the saved "
                    "configuration"
                )
            reads = []
            if not partial_zero(spec):
                for box in local_boxes(shape, spec):
                    for sh in e["shards"]:
                        inter = intersect(box.offsets, box.lengths, sh["offsets"], sh["lengths"])
                        if inter is not None:
                            reads.append((box, sh, inter))
            tplans.append((name, leaf, tuple(arr.shape), dtype_of(e["dtype"]), reads))
        else:
            if name not in objects:
                where = "a tensor" if name in tensors else "missing"
                raise CheckpointError(
                    f"{label}: value {name!r} of the state dict is {where} in the checkpoint "
                    f"(its values: {_names(objects)})"
                )
            ovals.append((path, decode_object(objects[name]["value"], label)))
    return tplans, ovals


_MAX_RUNS = 1 << 16


def _byte_ranges(sl, rel_lo, rel_hi, isz):
    """Contiguous byte ranges of the C-order piece of shape ``sl`` that region
    ``[rel_lo, rel_hi)`` occupies (one range from its first to its last element when there
    would be more than ``_MAX_RUNS``)."""
    nd = len(sl)
    strides = [int(np.prod(sl[d + 1:], dtype=np.int64)) for d in range(nd)]
    k = nd - 1  # dims after k are whole: each run is contiguous along k and beyond
    while k > 0 and rel_lo[k] == 0 and rel_hi[k] == sl[k]:
        k -= 1
    n_runs = int(np.prod([rel_hi[d] - rel_lo[d] for d in range(k)], dtype=np.int64))
    run_len = (rel_hi[k] - rel_lo[k]) * strides[k]
    if n_runs > _MAX_RUNS:
        first = sum(a * s for a, s in zip(rel_lo, strides))
        last = sum((b - 1) * s for b, s in zip(rel_hi, strides)) + 1
        return [(first * isz, last * isz)]
    out = []
    for prefix in np.ndindex(*[rel_hi[d] - rel_lo[d] for d in range(k)]):
        start = sum((rel_lo[d] + prefix[d]) * strides[d] for d in range(k)) + rel_lo[k] * strides[k]
        out.append((start * isz, (start + run_len) * isz))
    return out


def _read_piece(reader, sh, lo, hi, dtype, block_size, what) -> np.ndarray:
    """Elements ``[lo, hi)`` (logical coordinates) of saved piece ``sh``, read and verified.

    The window read is the rows ``[lo[0], hi[0])`` of the piece; inside it only the byte
    ranges the region occupies are read (block-wise, see ``FileSystemReader.read_window``)."""
    so, sl = sh["offsets"], sh["lengths"]
    isz = dtype.itemsize
    if not sl:  # a 0-d tensor
        raw = reader.read_window(sh, 0, isz, [(0, isz)], block_size, what)
        return raw.view(dtype).reshape(())
    rel_lo = [a - o for a, o in zip(lo, so)]
    rel_hi = [b - o for b, o in zip(hi, so)]
    row = int(np.prod(sl[1:], dtype=np.int64)) * isz
    w0, w1 = rel_lo[0] * row, rel_hi[0] * row
    raw = reader.read_window(sh, w0, w1, _byte_ranges(sl, rel_lo, rel_hi, isz), block_size, what)
    view = raw.view(dtype).reshape(rel_hi[0] - rel_lo[0], *sl[1:])
    return view[(slice(None),) + tuple(slice(a, b) for a, b in zip(rel_lo[1:], rel_hi[1:]))]


def _stage(tplans, reader, block_size):
    staged = []
    for name, leaf, local_shape, dtype, reads in tplans:
        # the saved pieces tile the tensor, so the reads cover every element; a P target's
        # non-zero coordinates have no reads and stay zeros
        out = np.empty(local_shape, dtype=dtype) if reads else np.zeros(local_shape, dtype=dtype)
        for box, sh, (lo, hi) in reads:
            out[box.local_slices(lo, hi)] = _read_piece(reader, sh, lo, hi, dtype, block_size,
                                                        f"tensor {name!r}")
        staged.append((leaf, out))
    return staged


def _commit(staged, ovals, state_dict) -> None:
    for leaf, value in staged:
        if isinstance(leaf, np.ndarray):
            leaf[...] = value.astype(leaf.dtype, copy=False)
            continue
        xp = get_array_module(leaf.array)
        leaf.array[...] = xp.asarray(value.astype(leaf.array.dtype, copy=False))
        leaf._bump_version()
    for path, value in ovals:
        node = state_dict
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value


def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None,
         process_group=None, no_dist: bool = False, _note: bool = True) -> None:
    """Load a sharded checkpoint into ``state_dict`` in place (a collective).

    PyTorch's ``torch.distributed.checkpoint.load``: every tensor of ``state_dict`` receives
    its part of the saved logical tensor under its own layout; non-tensor leaves are
    replaced by the saved values. See the module docstring. ``planner``: None or
    ``DefaultLoadPlanner(allow_partial_load=...)``; a ``HuggingFaceStorageReader`` reads
    Hugging Face safetensors files (``hf_storage.py``)."""
    if _note:  # PyTorch's one-process UserWarning (single_process.py); internal callers skip it
        note_single_process("load", no_dist, process_group)
    partial = load_options(planner)
    reader = storage_reader
    if reader is None:
        if checkpoint_id is None:
            raise ValueError("dcp.load needs checkpoint_id=<folder> (or storage_reader=)")
        reader = FileSystemReader(checkpoint_id)
    check_storage(reader, FileSystemReader, "load")
    group = _comm.LocalCommunicator() if no_dist else (process_group or _comm.get_world())
    rank = group.rank
    if isinstance(reader, HuggingFaceStorageReader):
        return _load_stateful(state_dict, lambda sd: load_hf(sd, reader, group, partial))
    return _load_stateful(state_dict, lambda sd: _load(sd, reader, group, rank, partial))


def _load_stateful(state_dict, load_plain) -> None:
    """Run ``load_plain`` on ``state_dict`` with its Stateful values replaced by their state
    dicts, then give each its loaded state (``load_state_dict``)."""
    # Stateful values (a Module, an optimizer, an AppState): loaded into their state_dict()
    # in place, then given to their load_state_dict, as PyTorch's dcp.load does
    stateful = {k: v for k, v in state_dict.items() if isinstance(v, Stateful)}
    if stateful:
        inner = stateful_to_state_dict(state_dict)
        load_plain(inner)
        for k, v in inner.items():
            if k in stateful:
                stateful[k].load_state_dict(v)
            else:
                state_dict[k] = v
        return None
    return load_plain(state_dict)


def _load(state_dict, reader, group, rank, allow_partial_load=False) -> None:
    """``load``'s protocol on a plain (nested dict) ``state_dict``."""

    def agree(err, step):
        errs = exchange.all_gather(group, step, err)
        bad = {r: e for r, e in enumerate(errs) if e}
        if bad:
            raise CheckpointException("dcp.load failed, nothing was loaded: " + "; ".join(
                dict.fromkeys(bad.values())), bad)

    err = tplans = ovals = None
    try:
        index = reader.read_index()
        tplans, ovals = _plan(flatten(state_dict), index, reader.path, allow_partial_load)
    except (CheckpointError, FileNotFoundError, TypeError, ValueError) as e:
        err = f"rank {rank}: {e}"
    agree(err, "dcp.load (plan)")  # #1
    staged = None
    try:
        staged = _stage(tplans, reader, index["block_size"])
    except (CheckpointError, OSError, ValueError) as e:
        err = f"rank {rank}: {e}"
    finally:
        reader.close()
    agree(err, "dcp.load (read)")  # #2
    _commit(staged, ovals, state_dict)
