"""``all_to_all_single`` with split sizes (torch's uneven all-to-all), on the engines'
equal all-to-all.

Rank i sends rows ``input_split_sizes[j]`` of its input to rank j, which writes them at
its ``output_split_sizes[i]`` rows. The engines exchange equal blocks only, so:

1. every rank's sizes travel in one small all-gather (blocking, also under
   ``async_op=True``), and each rank checks that what i sends to j is what j expects from
   i: a mismatch raises ``RuntimeError`` on every rank naming both ranks and both sizes,
   before any data moves (torch's gloo run fails an ``enforce`` on one rank and times out
   on the other);
2. the blocks are padded to the largest split and exchanged with one all-to-all; the
   rows that arrive are copied to their places in ``output`` when the call completes.

Deviation from torch: the padding costs ``world * max_split`` rows of traffic per rank
instead of the split sizes' sum.
"""

from __future__ import annotations

import numpy as np

from ..backend.xp import get_array_module


def _splits(sizes, array, n: int, which: str) -> list[int]:
    """The ``n`` split sizes of ``array``'s dim 0 (equal when ``sizes`` is None), checked."""
    rows = int(array.shape[0]) if array.ndim else 0
    if sizes is None:
        if rows % n:
            raise RuntimeError(f"all_to_all_single: {which} dim 0 ({rows}) is not divisible by "
                               f"the world size {n}; pass {which}_split_sizes")
        return [rows // n] * n
    sizes = [int(v) for v in sizes]
    if len(sizes) != n:
        raise RuntimeError(f"all_to_all_single: {which}_split_sizes has {len(sizes)} entries; "
                           f"it needs {n}, one per rank of the group")
    if any(v < 0 for v in sizes) or sum(sizes) != rows:  # torch's words first
        raise RuntimeError(f"Split sizes doesn't match total dim 0 size (all_to_all_single: "
                           f"{which}_split_sizes {sizes} sum to {sum(sizes)}, but the {which} "
                           f"has {rows} rows)")
    return sizes


def uneven_all_to_all(g, out, inp, output_split_sizes, input_split_sizes, run, output):
    """Run the exchange on group ``g`` (see the module docstring); ``run(fn, post)`` is the
    caller's blocking-or-async driver, ``output`` the Tensor whose version is bumped."""
    n = g.size
    ins = _splits(input_split_sizes, inp, n, "input")
    outs = _splits(output_split_sizes, out, n, "output")
    if inp.shape[1:] != out.shape[1:]:
        raise RuntimeError(f"all_to_all_single: input rows {tuple(inp.shape[1:])} and output rows "
                           f"{tuple(out.shape[1:])} must have the same shape")
    table = np.asarray(g.all_gather(np.array(ins + outs, dtype=np.int64))).reshape(n, 2 * n)
    ranks = getattr(g, "world_ranks", None) or list(range(n))
    bad = [f"rank {ranks[i]} sends {table[i, j]} rows to rank {ranks[j]}, which expects "
           f"{table[j, n + i]}" for i in range(n) for j in range(n) if table[i, j] != table[j, n + i]]
    if bad:
        raise RuntimeError(
            "all_to_all_single: the ranks' split sizes do not match (" + "; ".join(bad) + "). "
            "Rank i's input_split_sizes[j] must equal rank j's output_split_sizes[i]; no data "
            "was exchanged.")
    xp = get_array_module(inp)
    m = max(int(table[:, :n].max()), 1)
    send = xp.zeros((n, m, *inp.shape[1:]), dtype=inp.dtype)
    at = 0
    for j, k in enumerate(ins):
        send[j, :k] = inp[at:at + k]
        at += k
    recv = xp.empty_like(send)

    def post():
        at = 0
        for i, k in enumerate(outs):
            out[at:at + k] = recv[i, :k]
            at += k
        output._bump_version()

    return run(lambda asy: g.all_to_all(send, out=recv, async_op=asy), post)
