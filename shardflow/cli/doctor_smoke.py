"""The rank program of the doctor's smoke test: a real all_reduce, checked and timed.

``shardflow doctor`` starts it on 2 ranks (or one per host of ``--hosts``) through the
launcher with a short ``--timeout`` and collective timeout. Each rank all_reduces a vector
whose sum it knows (rank r contributes r + 1, so the result must be n(n+1)/2 everywhere:
a wrong transport fails, it does not just look slow), then times

* latency: median of 30 all_reduce calls of one float32;
* bandwidth: median of 5 all_reduce calls of ``--mb`` MiB of float32, reported as the bus
  bandwidth ``2 (n - 1) / n * bytes / time`` (NCCL-tests' definition, comparable across n).

Rank 0 prints one line ``SMOKE {json}`` that the doctor parses.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import time

import numpy as np


def _median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m shardflow.cli.doctor_smoke")
    p.add_argument("--mb", type=float, default=4.0)
    args = p.parse_args(argv)
    from ..comm import init

    world = init()
    n, rank = world.size, world.rank
    check = np.full(1000, rank + 1, np.float32)
    world.all_reduce(check)
    expected = n * (n + 1) / 2
    ok = bool(np.all(check == expected))
    hosts = world.all_gather_object(socket.gethostname())
    small = np.zeros(1, np.float32)
    world.barrier()
    latency = _median_time(lambda: world.all_reduce(small), 30)
    big = np.ones(max(1, int(args.mb * 2**20 / 4)), np.float32)
    world.all_reduce(big)  # warm-up
    world.barrier()
    t = _median_time(lambda: world.all_reduce(big), 5)
    busbw = 2 * (n - 1) / n * big.nbytes / t if n > 1 else 0.0
    if rank == 0:
        print("SMOKE " + json.dumps({"ranks": n, "hosts": hosts, "correct": ok,
                                     "got": float(check[0]), "expected": expected,
                                     "latency_us": latency * 1e6, "bytes": big.nbytes,
                                     "busbw_gbs": busbw / 1e9}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
