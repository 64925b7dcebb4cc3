"""``shardflow bench comm``: all_reduce bus bandwidth, shardflow vs raw mpi4py, in one run.

Started as a plain process, it relaunches itself on ``-n`` ranks (default 2) through
mpiexec. Each rank then, for message sizes 1 KB .. 64 MB (float32, x4 steps), times
interleaved rounds of (a) ``shardflow.comm`` ``all_reduce`` (the checked call: the ranks'
call signatures are exchanged first, with the data itself for messages under 3 KB in
total, then ``Allreduce(IN_PLACE)`` under the watchdog) and (b) raw mpi4py
``COMM_WORLD.Allreduce(IN_PLACE, buf)``
(blocking, buffer-based) — the same buffer, the same ranks, after a barrier. Each cell is
the median over rounds of the per-call time; bus bandwidth = bytes * 2(n-1)/n / time
(NCCL-tests' definition). Rank 0 prints the table with the ratio shardflow / raw.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from .. import _config

SIZES = [1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def _fmt_size(n: int) -> str:
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def _relaunch(module: str, n: int, argv: list[str]) -> int:
    from ..comm.launcher import build_mpiexec_command, rank_env

    cmd = build_mpiexec_command(n, [sys.executable, "-u", "-m", module, *argv], tag_output=False)
    env = rank_env({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    return subprocess.run(cmd, env=env).returncode


def _worker(args) -> int:
    from ..comm import init
    from ..comm.mpi import mpi

    MPI = mpi()
    w = init()
    raw = MPI.COMM_WORLD
    n = w.size
    rows = []
    for size in SIZES:
        if size > args.max_bytes:
            break
        buf = np.ones(size // 4, dtype=np.float32)
        reps = max(3, min(200, int(args.budget / (2 * size / 1e9 + 2e-5))))
        t_sf, t_raw = [], []
        for _ in range(args.rounds):
            for which in ("sf", "raw"):
                raw.Barrier()
                t0 = time.perf_counter()
                if which == "sf":
                    for _ in range(reps):
                        w.all_reduce(buf)
                else:
                    for _ in range(reps):
                        raw.Allreduce(MPI.IN_PLACE, buf)
                dt = (time.perf_counter() - t0) / reps
                # the slowest rank defines the collective's time
                dt = raw.allreduce(dt, op=MPI.MAX)
                (t_sf if which == "sf" else t_raw).append(dt)
        busbw = size * 2 * (n - 1) / n
        a, b = statistics.median(t_sf), statistics.median(t_raw)
        rows.append((size, a, b, busbw / a / 1e9, busbw / b / 1e9))
    if w.rank == 0:
        print(f"all_reduce bus bandwidth, {n} ranks, float32 (median of {args.rounds} rounds)")
        print(f"{'size':>8} | {'shardflow us':>12} | {'mpi4py us':>10} | {'sf GB/s':>8} | "
              f"{'mpi4py GB/s':>11} | {'sf / mpi4py':>11}")
        print("-" * 76)
        for size, a, b, bwa, bwb in rows:
            print(f"{_fmt_size(size):>8} | {a * 1e6:12.1f} | {b * 1e6:10.1f} | {bwa:8.3f} | "
                  f"{bwb:11.3f} | {bwa / bwb:11.2f}")
        big = [bwa / bwb for size, a, b, bwa, bwb in rows if size >= 1 << 20]
        if big:
            print(f"messages >= 1 MB: shardflow reaches {min(big):.2f} .. {max(big):.2f} of raw "
                  "mpi4py bus bandwidth (target >= 0.95)")
    return 0


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench comm", description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds per size")
    p.add_argument("--max-bytes", type=int, default=64 << 20, help="largest message (bytes)")
    p.add_argument("--budget", type=float, default=0.05, help="rough seconds per cell")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if _config.launch_info().launcher == "none":
        return _relaunch("shardflow.bench.comm", args.n, argv)
    return _worker(args)


if __name__ == "__main__":
    sys.exit(main())
