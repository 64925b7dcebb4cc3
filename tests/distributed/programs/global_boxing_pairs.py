"""Boxing between every (src, dst) pair of B, P, S(0), S(1) (per mesh dimension), with
gradients: the value, this rank's shard (for non-partial targets) and the gradient equal
the local computation; on an even 1-D mesh of 2, each pair of DESIGN.md's table is one
collective of the expected kind or none. Prints ``pairs N``.

``argv``: the mesh (``none`` for all ranks in a row, or ``2x2``) and the shape (``6,8``)."""

import warnings

import numpy as np

import shardflow as sf
from shardflow.distributed import comm_plan, layout, placement

from ._common import close, spread
from ._global_cases import B, P, S


def main(argv):
    warnings.simplefilter("ignore")
    mesh = placement("cpu") if argv[0] == "none" else placement("cpu", [[0, 1], [2, 3]])
    shape = tuple(int(k) for k in argv[1].split(","))
    full = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    R = sf.tensor(np.random.default_rng(4).standard_normal(shape).astype(np.float32))
    kinds = [B, P, S(0), S(1)]
    if mesh.ndim == 1:
        layouts = [(k,) for k in kinds]
    else:
        layouts = [(a, b) for a in kinds for b in kinds]
    seen = {}
    for src in layouts:
        for dst in layouts:
            leaf = sf.tensor(full, requires_grad=True)
            x = spread(leaf, mesh, [B] * mesh.ndim).to_global(sbp=src)
            with comm_plan() as plan:
                y = x.to_global(sbp=dst)
            assert y.sbp == dst and tuple(y.shape) == shape, (src, dst)
            close(y.numpy(), full, f"{src}->{dst} value")
            if not any(s.is_partial() for s in dst):  # the shard is the expected slice
                idx = layout.local_index(shape, mesh.shape, mesh.coordinate, dst)
                close(y.to_local().numpy(), layout.take(full, idx), f"{src}->{dst} shard")
            (y * R).sum().backward()
            close(leaf.grad.numpy(), R.numpy(), f"{src}->{dst} grad")
            seen[(src, dst)] = sorted(plan.counts())
    if mesh.ndim == 1 and mesh.size() == 2:
        # the table of DESIGN.md on an even split: one collective of the expected kind, or none
        expect = {(P, B): ["all_reduce"], (S(0), B): ["all_gather"], (B, S(0)): [],
                  (P, S(0)): ["reduce_scatter"], (B, P): [], (S(1), S(0)): ["all_to_all"]}
        for (a, b), want in expect.items():
            got = seen[((a,), (b,))]
            assert got == want, (a, b)
    print("pairs", len(seen), flush=True)
