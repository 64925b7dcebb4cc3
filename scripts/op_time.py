"""Per-op time of the small-op line of ``shardflow bench engine``, shardflow vs torch,
interleaved in one process (µs per op, medians; the ratio is what to compare across runs).

The same chain as ``bench/engine.py``'s ``bench_small_op`` (``y = y * b`` on 16-element
float32 tensors that require grad, ``n`` ops, then ``y.sum().backward()`` for the second
line), alternating the libraries chain by chain so that machine noise hits both alike;
``scripts/op_cost.py`` counts the same chains' instructions, which the load does not move:

    python scripts/op_time.py --repeats 41
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys


def chain(lib, v, n: int, backward: bool) -> float:
    """The bench's chain (``small_op_chain``) on fresh tensors of ``lib``."""
    from shardflow.bench.engine import small_op_chain

    return small_op_chain(lib.tensor(v, requires_grad=True), lib.tensor(v * 0 + 1.0001, requires_grad=True),
                          n, backward)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=2000, help="ops per chain (the bench's)")
    p.add_argument("--repeats", type=int, default=41, help="timed chains per library and line")
    args = p.parse_args(argv)
    # this checkout's shardflow (a script's own folder, not the root, starts sys.path)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import numpy as np
    import torch

    import shardflow as sf

    v = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    for backward in (False, True):
        for _ in range(5):  # warm-up
            chain(sf, v, args.n, backward)
            chain(torch, v, args.n, backward)
        s, t = [], []
        for _ in range(args.repeats):
            s.append(chain(sf, v, args.n, backward))
            t.append(chain(torch, v, args.n, backward))
        ms, mt = statistics.median(s), statistics.median(t)
        print(f"{'fwd+bwd' if backward else 'fwd':<8} shardflow {ms:6.3f} us  torch {mt:6.3f} us  "
              f"ratio {ms / mt:.3f}")
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
