"""``all_reduce_coalesced`` / ``all_gather_coalesced``: one collective for a list of tensors
(layer L6).

Communication plan: the tensors (one dtype; torch's gloo requires it too) are flattened into
one contiguous buffer, ``[t0.ravel(), t1.ravel(), ...]`` (total elements E), that goes
through one all-reduce, or one all-gather into ``(world, E)``; the results are then copied
back into the tensors (all-reduce, in place) or into ``output_tensor_lists[rank][i]``
(all-gather). So a list of many small tensors costs one message, as in torch.
"""

from __future__ import annotations

from ..backend.xp import get_array_module
from ..comm import ReduceOp

__all__ = ["all_reduce_coalesced", "all_gather_coalesced"]


def _flat(tensors, what):
    from . import _arr  # the package's helper, defined before this module is imported

    arrays = [_arr(t, f"{what}[{i}]") for i, t in enumerate(tensors)]
    if not arrays:
        raise ValueError(f"{what} is empty; pass at least one tensor")
    dtypes = sorted({str(a.dtype) for a in arrays})
    if len(dtypes) != 1:
        raise ValueError(f"{what}: all tensors must have one dtype to be coalesced, got "
                         f"{dtypes}; cast them to one dtype or call the collective per tensor")
    xp = get_array_module(arrays[0])
    return arrays, xp.concatenate([a.reshape(-1) for a in arrays])  # (E,)


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce every tensor of ``tensors`` over the group, in place, with one all-reduce."""
    from . import _group, _run

    g = _group(group)
    arrays, flat = _flat(list(tensors), "all_reduce_coalesced: tensors")

    def post():
        start = 0
        for t, a in zip(tensors, arrays):
            a[...] = flat[start:start + a.size].reshape(a.shape)
            start += a.size
            t._bump_version()

    return _run(g, lambda asy: g.all_reduce(flat, op, async_op=asy), async_op, post)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None,
                         async_op: bool = False):
    """``output_tensor_lists[j][i]`` receives rank j's ``input_tensor_list[i]``, with one
    all-gather (every rank passes the same shapes)."""
    from . import _arr, _group, _run

    g = _group(group)
    arrays, flat = _flat(list(input_tensor_list), "all_gather_coalesced: input_tensor_list")
    if len(output_tensor_lists) != g.size:
        raise ValueError(f"all_gather_coalesced needs output_tensor_lists of {g.size} lists "
                         f"(one per rank), got {len(output_tensor_lists)}")
    for j, outs in enumerate(output_tensor_lists):
        shapes = [tuple(_arr(o, f"output_tensor_lists[{j}][i]").shape) for o in outs]
        if shapes != [tuple(a.shape) for a in arrays]:
            raise ValueError(f"all_gather_coalesced: output_tensor_lists[{j}] must have the "
                             f"input shapes {[tuple(a.shape) for a in arrays]}, got {shapes}")
    out = get_array_module(flat).empty((g.size, flat.size), dtype=flat.dtype)  # (world, E)

    def post():
        for row, outs in zip(out, output_tensor_lists):
            start = 0
            for o in outs:
                o.array[...] = row[start:start + o.array.size].reshape(o.array.shape)
                start += o.array.size
                o._bump_version()

    return _run(g, lambda asy: g.all_gather(flat, out=out, async_op=asy), async_op, post)
