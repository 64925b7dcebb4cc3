"""``shardflow bench <suite>`` / ``python -m shardflow.bench <suite>``.

Suites: engine (single-process training steps vs PyTorch eager), comm (all_reduce bus
bandwidth vs raw mpi4py), ddp (DistributedDataParallel step vs torch DDP on gloo), tp
(global-tensor overhead on one rank; tensor-parallel step and bytes vs Megatron's count),
suite (DLPerf-style throughput / speedup / scaling efficiency of 5 models on 1..N ranks,
PyTorch DDP side by side; Markdown, JSON, PNG), dcp (sharded checkpoint save/load vs a
gathered save and vs torch.distributed.checkpoint), kernels (fused Numba kernels vs the NumPy
<<<<<<< HEAD
path and PyTorch per op; shardflow.compile inference), rpc (RPC latency and throughput vs
torch.distributed.rpc).
=======
path and PyTorch per op; shardflow.compile inference), planner (the layout planner's predicted
step time and memory against measured, every valid layout of 1, 2 and 4 ranks).
>>>>>>> planner
"""

from __future__ import annotations

import importlib
import sys

SUITES = {"engine": "shardflow.bench.engine", "comm": "shardflow.bench.comm", "ddp": "shardflow.bench.ddp",
          "tp": "shardflow.bench.tp", "suite": "shardflow.bench.suite", "dcp": "shardflow.bench.dcp",
          "zero": "shardflow.bench.zero",
          "quant": "shardflow.bench.quant",
          "pipeline": "shardflow.bench.pipeline", "ps": "shardflow.bench.ps",
          "amp": "shardflow.bench.amp",
          "kernels": "shardflow.bench.kernels", "rpc": "shardflow.bench.rpc",
          "planner": "shardflow.bench.planner"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: shardflow bench {" + ",".join(SUITES) + "} [options]")
        return 0
    if argv[0] not in SUITES:
        print(f"unknown bench suite {argv[0]!r}; expected one of {', '.join(SUITES)}", file=sys.stderr)
        return 2
    from ..backend import tune_allocator

    tune_allocator()  # same allocator settings for shardflow and PyTorch (one process)
    return int(importlib.import_module(SUITES[argv[0]]).main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
