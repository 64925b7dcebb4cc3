"""``shardflow bench suite [--quick]``: the DLPerf-style suite: throughput, speedup and
scaling efficiency of data-parallel training, shardflow next to PyTorch DDP (gloo).

Method (DLPerf's): the models of ``suite_models.py`` (MLP, LeNet-5, ResNet-20, GPT-mini,
BERT-style encoder); configurations of 1..N ranks (``--ranks 1,2``), one BLAS thread per
rank (a rank is one "device"; N ranks on N cores), a fixed batch per rank; each
configuration is one mpiexec job in which every rank, for each model, runs

* shardflow: ``DistributedDataParallel`` (also at 1 rank, so the 1-rank row carries the
  same wrapper), forward, cross-entropy, backward (bucketed all_reduce), optimizer step;
* PyTorch, when installed: the same model definition, ``torch.nn.parallel.
  DistributedDataParallel`` on gloo (TCP on localhost), the same step;

``--warmup`` steps (default 2) excluded, then ``--steps`` timed steps (default 7), each
started after a barrier; the step time is the slowest rank's, the figure the median.

Reported per model, framework and rank count: throughput (samples/s = ranks x batch /
step; tokens/s for GPT/BERT), speedup (throughput / 1-rank throughput), scaling
efficiency (speedup / ranks), shardflow / PyTorch throughput ratio, memory (shardflow: the
peak bytes of NumPy arrays alive during one step, params + grads + optimizer state +
activations, measured with ``tracemalloc`` in an extra untimed step; PyTorch's CPU
allocations are invisible to it, so its cell is "-"), and MFU: achieved FLOP/s per rank
over the single-thread float32 GEMM rate measured at the start of the job (a 512^3
``matmul``; this machine's real peak for a one-core rank, not a datasheet number).
A model that raises MemoryError shows "OOM"; one that fails otherwise "ERR".

Outputs in ``--out`` (default ``bench-suite/``): ``suite.md`` (the table and an
environment block: versions, cores, CPU, MPI library, topology), ``suite.json`` (every
figure and per-step times), ``throughput.png`` and ``scaling.png`` (matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from .. import _config
from .ddp import free_port
from .suite_report import write_outputs


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench suite", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="smaller models and batches (about a minute on 2 cores)")
    p.add_argument("--ranks", default=None, help="comma list of rank counts (default 1,2)")
    p.add_argument("--models", default="mlp,lenet,resnet20,gpt,bert")
    p.add_argument("--steps", type=int, default=7, help="timed steps (default 7)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps (default 2)")
    p.add_argument("--no-torch", action="store_true", help="shardflow only")
    p.add_argument("--out", default="bench-suite", help="output folder")
    p.add_argument("--job-timeout", type=float, default=480.0,
                   help="seconds one configuration may take (default 480)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # result file of a rank job
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    return p


def _run_config(n: int, args, argv: list[str]) -> dict:
    """One mpiexec job of ``n`` ranks; returns rank 0's result document."""
    from ..comm.launcher import build_mpiexec_command, kill_session, rank_env

    with tempfile.TemporaryDirectory(prefix="shardflow-suite-") as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = build_mpiexec_command(
            n, [sys.executable, "-u", "-m", "shardflow.bench.suite", *argv, "--worker", out,
                "--port", str(free_port())], tag_output=False)
        env = rank_env({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                        "MKL_NUM_THREADS": "1"})
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            log, _ = proc.communicate(timeout=args.job_timeout)
        except subprocess.TimeoutExpired:
            kill_session(proc.pid, grace=1.0)
            log, _ = proc.communicate()
            return {"ranks": n, "error": f"timed out after {args.job_timeout:g} s", "log": log}
        if proc.returncode != 0 or not os.path.exists(out):
            return {"ranks": n, "error": f"exit code {proc.returncode}", "log": log[-4000:]}
        with open(out) as f:
            doc = json.load(f)
        doc["job_seconds"] = time.monotonic() - t0
        return doc


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.worker:
        from .suite_worker import worker

        return worker(args)
    if _config.launch_info().launcher != "none":
        print("shardflow bench suite starts its own rank jobs; run it as a plain process "
              "(not under shardflow run / mpiexec)", file=sys.stderr)
        return 2
    try:
        ranks = [int(r) for r in (args.ranks or "1,2").split(",")]
        if not ranks or min(ranks) < 1:
            raise ValueError
    except ValueError:
        print(f"--ranks must be a comma list of positive integers, got {args.ranks!r}; "
              "e.g. --ranks 1,2", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    configs = []
    for n in sorted(set(ranks)):
        print(f"[suite] {n} rank(s): {args.models} ...", flush=True)
        doc = _run_config(n, args, argv)
        if "error" in doc:
            print(f"[suite] {n} rank(s) failed: {doc['error']}\n{doc.get('log', '')}", flush=True)
        configs.append(doc)
    paths = write_outputs(configs, args, time.monotonic() - t0)
    with open(paths["md"]) as f:
        print(f.read())
    print("wrote " + ", ".join(paths.values()))
    return 0 if all("error" not in c for c in configs) else 1


if __name__ == "__main__":
    sys.exit(main())
