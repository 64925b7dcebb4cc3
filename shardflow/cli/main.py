"""The ``shardflow`` command: ``run``, ``train``, ``bench``, ``doctor``.

Each subcommand lives in its own module with ``main(argv) -> int`` and is imported only
when used, so ``shardflow run`` starts fast and needs nothing it does not use.
"""

from __future__ import annotations

import importlib
import sys

USAGE = """usage: shardflow <command> [args...]

commands:
  run     launch a script (or a shardflow command) on N local or remote ranks via mpiexec
            shardflow run -n 2 shardflow train gpt
  train   train a reference model end to end (gpt, mnist, digits)
            shardflow train gpt --max-steps 500
  bench   benchmarks: engine (vs PyTorch eager), comm (vs raw mpi4py), ddp (vs torch DDP)
            shardflow bench engine
  plan    the fastest parallel layout that fits (cost model; calibrate, published tables)
            shardflow plan --model gpt --ranks 4
  doctor  check this machine for the classic distributed-training pitfalls
  checkpoint  sharded checkpoints: consolidate into one safetensors file, shard, info
            shardflow checkpoint consolidate ckpt/step_100 model.safetensors

'shardflow <command> --help' shows a command's options.
"""

COMMANDS = {
    "run": "shardflow.cli.run",
    "train": "shardflow.cli.train",
    "bench": "shardflow.bench.__main__",
    "doctor": "shardflow.cli.doctor",
    "checkpoint": "shardflow.cli.checkpoint",
    "plan": "shardflow.cli.plan",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd not in COMMANDS:
        print(f"shardflow: unknown command {cmd!r}; expected one of {', '.join(COMMANDS)}\n", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    from ..backend import tune_allocator

    tune_allocator()  # an entry point may change process-wide state; see backend/memory.py
    module = importlib.import_module(COMMANDS[cmd])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
