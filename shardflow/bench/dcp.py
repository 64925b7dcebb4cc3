"""``shardflow bench dcp``: sharded checkpoint save/load times, and PyTorch DCP beside them.

Started as a plain process, it relaunches itself on ``-n`` ranks (default 2). The state is
``--mb`` MB of float32 tensors of shape (rows, 1024), laid out ``S(0)`` over the ranks (what
``fully_shard`` / ZeRO-3 parameters and AdamW moments look like). Each phase runs
``--rounds`` times into a fresh folder under ``--dir``; the time of a round is the slowest
rank's; the table shows medians.

* ``sharded save``: ``dcp.save`` (every rank writes its shard; index commit);
* ``gathered save``: what ``shardflow train`` does today — every tensor all-gathered
  (``full_state``), rank 0 writes one safetensors file with ``shardflow.save``;
* ``load S(0)``: ``dcp.load`` into the same layout (each rank reads its rows);
* ``load B``: ``dcp.load`` into whole tensors on every rank (each rank reads everything);
* one process (rank 0 alone, the whole state as plain tensors): ``dcp.save(no_dist=True)``
  and ``dcp.load`` against ``torch.distributed.checkpoint.save/load(no_dist=True)`` of
  the same bytes, and the ratio shardflow / torch.

Throughput is state bytes / time. shardflow verifies a CRC-32 of every block it reads and
writes a CRC list per piece (PyTorch's DCP checksums nothing by default). Page-cache effects are the same for both libraries (files
are written and read back warm); the numbers measure the software path, not the disk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

from .. import _config
from .comm import _relaunch


def _parser():
    ap = argparse.ArgumentParser(prog="shardflow bench dcp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=2, help="ranks (default 2)")
    ap.add_argument("--mb", type=float, default=64.0, help="state size in MB (default 64)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=None, help="folder for the checkpoints (default: a temp dir)")
    return ap


def _timed(fn, world, rounds):
    times = []
    for i in range(rounds):
        world.barrier()
        t0 = time.perf_counter()
        fn(i)
        dt = time.perf_counter() - t0
        times.append(max(world.all_gather_object(dt)))
    return statistics.median(times)


def _worker(args) -> int:
    import shardflow as sf
    import shardflow.distributed.checkpoint as dcp
    from shardflow import comm
    from shardflow.distributed import distribute_tensor, placement, sbp
    from shardflow.distributed.full_state import _full_array

    world = comm.init()
    rank, n = world.rank, world.size
    p = placement("cpu", list(range(n)))
    cols = 1024
    rows = 512
    count = max(1, int(args.mb * 1e6 / (rows * cols * 4)))
    g = np.random.default_rng(0)
    fulls = {f"t{i}": g.standard_normal((rows, cols)).astype(np.float32) for i in range(count)}
    nbytes = sum(a.nbytes for a in fulls.values())
    state = {k: distribute_tensor(sf.tensor(a), p, sbp.split(0)) for k, a in fulls.items()}
    root = world.broadcast_object(tempfile.mkdtemp(prefix="sf-bench-dcp-", dir=args.dir)
                                  if rank == 0 else None, 0)
    res = {}
    res["sharded save"] = _timed(
        lambda i: dcp.save(state, checkpoint_id=os.path.join(root, f"s{i}")), world, args.rounds)

    def gathered(i):
        whole = {k: sf.tensor(np.asarray(_full_array(v.array, v._spec))) for k, v in state.items()}
        if rank == 0:
            sf.save(whole, os.path.join(root, f"g{i}.safetensors"))

    res["gathered save"] = _timed(gathered, world, args.rounds)
    res["load S(0)"] = _timed(lambda i: dcp.load(state, checkpoint_id=os.path.join(root, "s0")),
                              world, args.rounds)
    whole = {k: sf.zeros(*a.shape) for k, a in fulls.items()}
    res["load B"] = _timed(lambda i: dcp.load(whole, checkpoint_id=os.path.join(root, "s0")),
                           world, args.rounds)
    ok = all(np.array_equal(whole[k].numpy(), fulls[k]) for k in fulls)

    if rank == 0:
        one = _one_process(fulls, root, args.rounds)
        print(f"shardflow bench dcp: {n} ranks, state {nbytes / 1e6:.1f} MB ({count} x "
              f"({rows}, {cols}) float32, S(0)), {args.rounds} rounds, medians of the slowest "
              f"rank; load B values checked: {ok}; load average {os.getloadavg()[0]:.2f}")
        print()
        print("| phase | seconds | MB/s |")
        print("|---|---:|---:|")
        for k, t in res.items():
            print(f"| {k} ({n} ranks) | {t:.3f} | {nbytes / 1e6 / t:.0f} |")
        print()
        print("| one process | shardflow s | torch s | shardflow / torch |")
        print("|---|---:|---:|---:|")
        for k, (a, b) in one.items():
            print(f"| {k} | {a:.3f} | {b:.3f} | {a / b:.2f} |")
        shutil.rmtree(root, ignore_errors=True)
    world.barrier()
    return 0 if ok else 1


def _one_process(fulls, root, rounds):
    import shardflow as sf
    import shardflow.distributed.checkpoint as dcp

    try:
        import torch
        import torch.distributed.checkpoint as tdcp
    except ImportError:  # pragma: no cover
        raise SystemExit("bench dcp needs torch for its reference: pip install torch") from None

    sf_state = {k: sf.tensor(a) for k, a in fulls.items()}
    th_state = {k: torch.from_numpy(a.copy()) for k, a in fulls.items()}

    def med(fn):
        ts = []
        for i in range(rounds):
            t0 = time.perf_counter()
            fn(i)
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    warnings.filterwarnings("ignore", message="torch.distributed is disabled")  # no_dist's note
    out = {}
    out["save"] = (med(lambda i: dcp.save(sf_state, checkpoint_id=os.path.join(root, f"o{i}"),
                                          no_dist=True)),
                   med(lambda i: tdcp.save(th_state, checkpoint_id=os.path.join(root, f"t{i}"),
                                           no_dist=True)))
    sf_t = {k: sf.zeros(*a.shape) for k, a in fulls.items()}
    th_t = {k: torch.zeros(a.shape) for k, a in fulls.items()}
    out["load"] = (med(lambda i: dcp.load(sf_t, checkpoint_id=os.path.join(root, "o0"), no_dist=True)),
                   med(lambda i: tdcp.load(th_t, checkpoint_id=os.path.join(root, "t0"), no_dist=True)))
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if _config.launch_info().launcher == "none":
        return _relaunch("shardflow.bench.dcp", args.n, argv)
    return _worker(args)


if __name__ == "__main__":
    sys.exit(main())
