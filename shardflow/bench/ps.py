"""``shardflow bench ps``: parameter-server training throughput vs DistributedDataParallel.

Workload: MLP 784-1024-1024-10, batch ``--rows`` per worker, SGD. Three runs with ``-n``
workers (default 2), each timed from the first to the last step of the slowest worker:

* ``ddp``: ``-n`` MPI ranks, DistributedDataParallel (all-reduce of the gradients);
* ``ps sync`` / ``ps async (staleness 2)``: ``--servers`` parameter-server processes and ``-n``
  worker processes over TCP on localhost (pull, forward, backward, push per step).

Reported: steps per second per worker (median over workers of their step rate) and the
ratio to DDP. Everything runs as separate processes with one BLAS thread each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from .. import _config

_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _model():
    import shardflow as sf
    import shardflow.nn as nn

    sf.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def _batch(rank, rows):
    g = np.random.default_rng(rank)
    return g.standard_normal((rows, 784)).astype(np.float32), g.integers(0, 10, rows)


def _train(step, steps, warmup):
    for _ in range(warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - t0)


def _ddp_worker(args) -> int:
    import shardflow as sf
    import shardflow.nn.functional as F
    from shardflow.nn.parallel import DistributedDataParallel

    from ..comm import init

    world = init()
    model = DistributedDataParallel(_model())
    opt = sf.optim.SGD(model.parameters(), lr=0.01)
    x, y = _batch(world.rank, args.rows)
    x, y = sf.tensor(x), sf.tensor(y)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    rate = _train(step, args.steps, args.warmup)
    rates = world.all_gather_object(rate)
    if world.rank == 0:
        print("RATES", json.dumps(rates), flush=True)
    return 0


def _role(cfg) -> int:
    import shardflow as sf
    import shardflow.nn.functional as F
    from shardflow.distributed.ps import ParameterServer, PSWorker

    if cfg["role"] == "server":
        s = ParameterServer(cfg["id"], cfg["workers"], lr=0.01, mode=cfg["mode"], staleness=cfg["staleness"])
        print("PORT", s.address[1], flush=True)
        s.serve()
        return 0
    model = _model()
    ps = PSWorker(model.parameters(), cfg["servers"], cfg["id"])
    if cfg["id"] == 0:
        ps.init_params()
    x, y = _batch(cfg["id"], cfg["rows"])
    x, y = sf.tensor(x), sf.tensor(y)

    def step():
        ps.pull()
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        ps.push()

    rate = _train(step, cfg["steps"], cfg["warmup"])
    ps.close()
    print("RATE", rate, flush=True)
    return 0


def _spawn(cfg):
    return subprocess.Popen([sys.executable, "-u", "-m", "shardflow.bench.ps", "--role", json.dumps(cfg)],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, **_THREADS})


def _ps_run(args, mode, staleness) -> list:
    srv = [_spawn({"role": "server", "id": i, "workers": args.n, "mode": mode, "staleness": staleness})
           for i in range(args.servers)]
    addrs = [["127.0.0.1", int(p.stdout.readline().split()[1])] for p in srv]
    wk = [_spawn({"role": "worker", "id": w, "servers": addrs, "rows": args.rows, "steps": args.steps,
                  "warmup": args.warmup}) for w in range(args.n)]
    rates = [float(p.communicate()[0].split("RATE")[-1]) for p in wk]
    for p in srv:
        p.wait(timeout=60)
    return rates


def _ddp_run(args) -> list:
    from ..comm.launcher import build_mpiexec_command, rank_env

    argv = ["--ddp-worker", "--rows", str(args.rows), "--steps", str(args.steps), "--warmup", str(args.warmup)]
    cmd = build_mpiexec_command(args.n, [sys.executable, "-u", "-m", "shardflow.bench.ps", *argv],
                                tag_output=False)
    out = subprocess.run(cmd, env=rank_env(_THREADS), capture_output=True, text=True).stdout
    return json.loads([ln for ln in out.splitlines() if ln.startswith("RATES")][0][6:])


def _parser():
    p = argparse.ArgumentParser(prog="shardflow bench ps", description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2, help="workers (DDP ranks)")
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--role", default=None, help=argparse.SUPPRESS)
    p.add_argument("--ddp-worker", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.role:
        return _role(json.loads(args.role))
    if args.ddp_worker or _config.launch_info().launcher != "none":
        return _ddp_worker(args)
    rows = [("ddp", _ddp_run(args)), ("ps sync", _ps_run(args, "sync", 0)),
            ("ps async (staleness 2)", _ps_run(args, "async", 2))]
    base = float(np.median(rows[0][1]))
    print(f"MLP 784-1024-1024-10, batch {args.rows} per worker, {args.n} workers, {args.servers} server(s); "
          f"{args.steps} steps after {args.warmup} warm-up")
    print(f"{'run':<24} | {'steps/s per worker':>18} | {'vs ddp':>6}")
    for name, r in rows:
        med = float(np.median(r))
        print(f"{name:<24} | {med:18.1f} | {med / base:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
