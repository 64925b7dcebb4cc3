"""``save(state_dict, checkpoint_id=path)``: every rank writes its shards, rank 0 commits.

Algorithm (a collective: every rank of the group calls it with a state dict of the same
keys and logical shapes):

1. *Local plan.* Flatten the state dict (``metadata.flatten``). For each tensor leaf, the
   boxes of the logical tensor this rank holds (``regions.local_boxes``: its shard of a
   global tensor, the whole of a plain tensor; ``P`` dimensions are boxed to ``B`` first,
   the only communication before writing). Non-tensor leaves are encoded to JSON.
   Rank 0 first removes strays of earlier killed saves and draws the save id.
2. *Exchange plans* (``all_gather_object``, #1). Every rank now knows every rank's boxes and
   computes the same global plan: keys, logical shapes and dtypes must agree across ranks;
   the distinct boxes of each tensor must tile it exactly; each distinct box is written by
   one of the ranks holding it, the one with the fewest bytes assigned so far (plain,
   replicated tensors are spread over the ranks instead of all landing on rank 0).
   Every error here is raised on all ranks before any file is written.
3. Each rank writes its assigned pieces to ``__<rank>_<save_id>.safetensors`` (atomic).
4. *Exchange results* (``all_gather_object``, #2): each rank's file name, byte offsets and
   CRC-32 blocks, or the error it hit.
5. Rank 0 writes ``index.json`` atomically (the commit), then removes the previous save's
   shard files. *Broadcast the outcome* (``broadcast_object``, #3): every rank returns, or
   every rank raises the same error.

Communication: two ``all_gather_object`` of small metadata and one ``broadcast_object``;
tensor bytes never travel between ranks (except ``P`` -> ``B`` boxing). The collectives are
shardflow.comm's checked calls, so a rank that died or never arrives ends the job with an
error naming it within ``SHARDFLOW_COMM_TIMEOUT``, and nothing is committed.
"""

from __future__ import annotations

import secrets
import traceback

import numpy as np

from ... import comm as _comm
from ..boxing import box_array
from ..global_tensor import GlobalSpec
from ..sbp import broadcast
from . import exchange
from .filesystem import FileSystemWriter, dtype_name, dtype_of
from .hf_storage import HuggingFaceStorageWriter, save_hf
from .metadata import FORMAT, CheckpointError, CheckpointException, encode_object, flatten
from .planner import check_save_planner
from .regions import local_boxes, spec_of
from .single_process import note_single_process
from .stateful import stateful_to_state_dict
from .storage_check import check_storage

__all__ = ["save"]


def _to_numpy(a) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    get = getattr(a, "get", None)  # a CuPy array: copy to the host
    return np.asarray(get() if get is not None else a)


def _local_array(t):
    """This rank's array of a tensor leaf, with ``P`` dimensions summed (boxed to ``B``)."""
    spec = spec_of(t)
    arr = t if isinstance(t, np.ndarray) else t.array
    if spec is not None and any(s.is_partial() for s in spec.sbp):
        dst = tuple(broadcast if s.is_partial() else s for s in spec.sbp)
        arr = box_array(arr, spec.placement, spec.shape, spec.sbp, dst, "dcp.save")
        spec = GlobalSpec(spec.placement, dst, spec.shape)
    return _to_numpy(arr), spec


def _saved_as(spec):
    if spec is None:
        return None
    return {"placement": spec.placement.ranks.tolist(), "sbp": [repr(s) for s in spec.sbp]}


def _local_plan(flat, rank: int):
    tensors, objects, arrays = {}, {}, {}
    for name, (path, leaf) in flat.items():
        if hasattr(leaf, "array") or isinstance(leaf, np.ndarray):
            arr, spec = _local_array(leaf)
            shape = tuple(spec.shape) if spec is not None else tuple(arr.shape)
            boxes = local_boxes(shape, spec)
            tensors[name] = {
                "path": list(path), "shape": list(shape), "dtype": dtype_name(arr, name),
                "saved_as": _saved_as(spec),
                "boxes": [(list(b.offsets), list(b.lengths)) for b in boxes],
            }
            arrays[name] = (arr, boxes)
        elif rank == 0:
            objects[name] = {"path": list(path), "value": encode_object(leaf, name)}
    return tensors, objects, arrays


def _global_plan(plans, world_size: int):
    """Validate the gathered plans and assign each distinct box a writer (same on all ranks)."""
    ref = plans[0]["tensors"]
    for r, p in enumerate(plans[1:], 1):
        if set(p["tensors"]) != set(ref):
            extra = sorted(set(p["tensors"]) - set(ref))[:5]
            missing = sorted(set(ref) - set(p["tensors"]))[:5]
            raise ValueError(
                f"dcp.save: rank {r}'s state dict has different tensors from rank 0's (rank {r} "
                f"also has {extra}, lacks {missing}); every rank must pass the same keys"
            )
        for k, e in p["tensors"].items():
            if (e["shape"], e["dtype"]) != (ref[k]["shape"], ref[k]["dtype"]):
                hint = ("; it is a plain tensor, which is saved as replicated (the same on every "
                        "rank). If it is a shard (e.g. optimizer state of a sharded parameter), "
                        "use get_state_dict(model, optimizer), whose values carry their layout"
                        if e["saved_as"] is None else "")
                raise ValueError(
                    f"dcp.save: tensor {k!r} has shape {tuple(e['shape'])} ({e['dtype']}) on rank "
                    f"{r} but {tuple(ref[k]['shape'])} ({ref[k]['dtype']}) on rank 0{hint}"
                )
    load = [0] * world_size
    assign: dict[str, list] = {}
    for k in sorted(ref):
        holders: dict[tuple, list[int]] = {}
        for r, p in enumerate(plans):
            for off, ln in p["tensors"][k]["boxes"]:
                holders.setdefault((tuple(off), tuple(ln)), []).append(r)
        shape = tuple(ref[k]["shape"])
        total = int(np.prod(shape, dtype=np.int64))
        boxes = sorted(holders)
        covered = sum(int(np.prod(ln, dtype=np.int64)) for _, ln in boxes)
        overlap = _overlap(boxes)
        if (covered != total and total) or overlap:
            why = f"boxes {overlap[0]} and {overlap[1]} overlap" if overlap else \
                f"they cover {covered} of its {total} elements"
            raise ValueError(
                f"dcp.save: the ranks' shards of {k!r} (shape {shape}) do not tile it: {why}; "
                "every rank must pass the same global tensor (same placement and sbp)"
            )
        itemsize = dtype_of(ref[k]["dtype"]).itemsize
        for box in boxes:
            rs = holders[box]
            w = min(rs, key=lambda r: (load[r], r))
            load[w] += int(np.prod(box[1], dtype=np.int64)) * itemsize
            assign.setdefault(k, []).append((box, w))
    return assign


def _overlap(boxes):
    for i, (ao, al) in enumerate(boxes):
        for bo, bl in boxes[i + 1:]:
            if all(max(x, y) < min(x + m, y + n) for x, m, y, n in zip(ao, al, bo, bl)):
                return (ao, al), (bo, bl)
    return None


def _piece_name(key: str, offsets) -> str:
    return f"{key}@{','.join(map(str, offsets))}"


def _cut(arr, boxes, off, ln):
    for b in boxes:
        if tuple(b.offsets) == tuple(off) and tuple(b.lengths) == tuple(ln):
            return np.ascontiguousarray(arr[b.local_slices()])
    raise AssertionError(f"box {off} {ln} not held here")  # the plan assigns only held boxes


def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist: bool = False, use_collectives: bool = True,
         _note: bool = True) -> dict:
    """Save ``state_dict`` as a sharded checkpoint in folder ``checkpoint_id`` (a collective).

    PyTorch's ``torch.distributed.checkpoint.save``. Global tensors are saved by their
    shards, plain tensors as replicated (written once), other values (numbers, strings,
    lists ...) from rank 0. Returns the committed index. See the module docstring.
    ``planner``: None or ``DefaultSavePlanner()`` (``planner.py``); a
    ``HuggingFaceStorageWriter`` writes Hugging Face safetensors files (``hf_storage.py``).
    ``use_collectives`` is accepted (shardflow's save always exchanges its plans)."""
    if _note:  # PyTorch's one-process UserWarning (single_process.py); internal callers skip it
        note_single_process("save", no_dist, process_group)
    check_save_planner(planner)
    writer = storage_writer if storage_writer is not None else None
    if writer is None:
        if checkpoint_id is None:
            raise ValueError("dcp.save needs checkpoint_id=<folder> (or storage_writer=)")
        writer = FileSystemWriter(checkpoint_id)
    check_storage(writer, FileSystemWriter, "save")
    group = _comm.LocalCommunicator() if no_dist else (process_group or _comm.get_world())
    if isinstance(writer, HuggingFaceStorageWriter):
        return save_hf(stateful_to_state_dict(state_dict), writer, group)
    rank, size = group.rank, group.size

    flat = flatten(stateful_to_state_dict(state_dict))  # Stateful values: their state_dict()
    err = None
    save_id = old_files = None
    try:
        tensors, objects, arrays = _local_plan(flat, rank)
        if rank == 0:
            writer.check_overwrite()
            old_files = writer.committed_files()
            writer.clean_strays()
            save_id = secrets.token_hex(4)
    except Exception as e:  # reported to every rank through the exchange below
        tensors, objects, arrays = {}, {}, {}
        err = f"rank {rank}: {type(e).__name__}: {e}"
    plans = exchange.all_gather(group, "dcp.save (plans)",
                                {"tensors": tensors, "save_id": save_id, "error": err})  # #1
    errors = {r: p["error"] for r, p in enumerate(plans) if p["error"]}
    if errors:
        raise CheckpointException("dcp.save failed before writing anything: "
                                  + "; ".join(errors.values()), errors)
    save_id = plans[0]["save_id"]
    assign = _global_plan(plans, size)
    writer.hook("planned", rank)

    # 3. write this rank's pieces
    mine = {k: [box for box, w in v if w == rank] for k, v in assign.items()}
    result = {"error": None, "file": None, "bytes": 0, "pieces": {}}
    try:
        pieces = {}
        for k, boxes in mine.items():
            arr, held = arrays[k]
            for off, ln in boxes:
                pieces[_piece_name(k, off)] = _cut(arr, held, off, ln)
        if pieces:
            fname, nbytes, where = writer.write_shard(rank, save_id, pieces)
            result.update(file=fname, bytes=nbytes, pieces=where)
        writer.hook("shard_written", rank)
    except Exception as e:
        result["error"] = f"rank {rank}: {type(e).__name__}: {e}"
    results = exchange.all_gather(group, "dcp.save (results)", result)  # #2

    # 5. commit on rank 0
    outcome = None
    if rank == 0:
        try:
            errors = {i: r["error"] for i, r in enumerate(results) if r["error"]}
            if errors:
                raise CheckpointException("dcp.save: nothing was committed; "
                                          + "; ".join(errors.values()), errors)
            index = _index(plans[0]["tensors"], objects, assign, results, save_id, size,
                           writer.block_size)
            # the state dict's own key order (the index's maps are sorted): what
            # dcp_to_torch_save rebuilds the dict in, as PyTorch's metadata keeps it
            index["order"] = list(flat)
            writer.write_index(index, rank)
            writer.remove_files(set(old_files or ()) - set(index["files"]))
            outcome = {"ok": True, "index": index}
        except Exception as e:
            outcome = {"ok": False, "error": str(e) if isinstance(e, CheckpointError) else
                       f"rank 0: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}",
                       "failures": getattr(e, "failures", None) or {0: str(e)}}
    outcome = exchange.broadcast(group, "dcp.save (commit)", outcome, 0)  # #3
    if not outcome["ok"]:
        raise CheckpointException(outcome["error"], outcome["failures"])
    writer.hook("committed", rank)
    return outcome["index"]


def _index(ref, objects, assign, results, save_id, size, block_size) -> dict:
    tensors = {}
    for k, e in ref.items():
        shards = []
        for (off, ln), w in assign.get(k, []):
            res = results[w]
            pname = _piece_name(k, off)
            byte_offset, byte_length, crcs = res["pieces"][pname]
            shards.append({"offsets": list(off), "lengths": list(ln), "file": res["file"],
                           "name": pname, "byte_offset": byte_offset,
                           "byte_length": byte_length, "crc32": crcs})
        tensors[k] = {"path": e["path"], "shape": e["shape"], "dtype": e["dtype"],
                      "saved_as": e["saved_as"], "shards": shards}
    files = {r["file"]: {"rank": i, "bytes": r["bytes"]} for i, r in enumerate(results) if r["file"]}
    return {"format": FORMAT, "save_id": save_id, "world_size": size, "block_size": block_size,
            "files": files, "tensors": tensors, "objects": objects}
