"""``shardflow bench ps``: parameter-server throughput vs DistributedDataParallel, and
convergence of sync vs async on the GPT task.

``--task mlp`` (default; throughput): MLP 784-1024-1024-10, batch ``--rows`` per worker,
SGD. Three runs with ``-n`` workers (default 2), each timed from the first to the last step
of the slowest worker:

* ``ddp``: ``-n`` MPI ranks, DistributedDataParallel (all-reduce of the gradients);
* ``ps sync`` / ``ps async (staleness 2)``: ``--servers`` parameter-server processes and ``-n``
  worker processes over TCP on localhost (pull, forward, backward, push per step).

Reported: steps per second per worker (median over workers of their step rate) and the
ratio to DDP. Everything runs as separate processes with one BLAS thread each.

``--task gpt`` (convergence): the char-level GPT of ``shardflow train gpt`` made small
(2 layers, 4 heads, n_embd 64, block 32, on the first ``--corpus-bytes`` of the standard
library's source), batch ``--rows`` sequences per worker, Adam on the servers (``--lr``).
Runs ``ps sync`` and ``ps async`` (staleness ``--staleness``, worker 1 slowed by
``--slow-ms`` per step); worker 0 measures the held-out loss (64 fixed val blocks) on the
parameters it pulled at 5 points of the run. Reported: the loss at each point for both
runs, async's final loss relative to sync's, and steps per second per worker (evaluation
time excluded). ``--simulate``: the same task in one process, to separate the effect of
staleness on Adam from the protocol (``_gpt_simulate``).
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


def _gpt_task(cfg):
    """(model, batch(step) -> (x, y), held-out loss(model)) of the GPT task, same on every process."""
    import shardflow as sf
    import shardflow.data as sfdata
    from shardflow.models import GPT

    corpus = sfdata.TextCorpus(block_size=32, max_bytes=cfg["corpus_bytes"])
    val = corpus.split("val")
    sf.manual_seed(0)
    model = GPT(vocab_size=corpus.vocab_size, block_size=32, n_layer=2, n_head=4, n_embd=64)
    vidx = np.random.default_rng(10**6).integers(0, len(val), 64)
    vx, vy = (sf.tensor(np.stack(a)) for a in zip(*val.__getitems__(vidx)))

    def batch(seed):
        idx = np.random.default_rng(seed).integers(0, len(corpus), cfg["rows"])
        x, y = zip(*corpus.__getitems__(idx))
        return sf.tensor(np.stack(x)), sf.tensor(np.stack(y))  # (rows, 32) each

    def held_out():
        with sf.no_grad():
            return float(model(vx, vy)[1].item())

    return model, batch, held_out


def _gpt_worker(cfg) -> int:
    from shardflow.distributed.ps import PSWorker

    model, batch, held_out = _gpt_task(cfg)
    ps = PSWorker(model.parameters(), cfg["servers"], cfg["id"])
    w, steps = cfg["id"], cfg["steps"]
    if w == 0:
        ps.init_params()
    marks = {0, *(round(steps * k / 4) for k in range(1, 5))}
    curve, spent, t0 = [], 0.0, time.perf_counter()
    for t in range(steps + 1):
        ps.pull()
        if w == 0 and t in marks:
            e0 = time.perf_counter()
            curve.append([t, held_out()])
            spent += time.perf_counter() - e0
        if t == steps:
            break
        if w == 1 and cfg["slow_ms"]:
            time.sleep(cfg["slow_ms"] / 1000)
        x, y = batch(1000003 * w + t)
        model.zero_grad()
        model(x, y)[1].backward()
        ps.push()
    rate = steps / (time.perf_counter() - t0 - spent)
    ps.close()
    print("RATE", rate, flush=True)
    if w == 0:
        print("CURVE", json.dumps(curve), flush=True)
    return 0


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
        s = ParameterServer(cfg["id"], cfg["workers"], lr=cfg["lr"], mode=cfg["mode"], staleness=cfg["staleness"],
                            optimizer=cfg["optimizer"])
        print("PORT", s.address[1], flush=True)
        s.serve()
        return 0
    if cfg["task"] == "gpt":
        return _gpt_worker(cfg)
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


def _ps_run(args, mode, staleness, curve=None) -> list:
    common = {"task": args.task, "lr": args.lr, "optimizer": args.optimizer}
    srv = [_spawn({"role": "server", "id": i, "workers": args.n, "mode": mode, "staleness": staleness, **common})
           for i in range(args.servers)]
    addrs = [["127.0.0.1", int(p.stdout.readline().split()[1])] for p in srv]
    wk = [_spawn({"role": "worker", "id": w, "servers": addrs, "rows": args.rows, "steps": args.steps,
                  "warmup": args.warmup, "slow_ms": args.slow_ms if mode == "async" else 0,
                  "corpus_bytes": args.corpus_bytes, **common}) for w in range(args.n)]
    outs = [p.communicate()[0] for p in wk]
    rates = [float(o.split("RATE")[-1].split()[0]) for o in outs]
    if curve is not None:
        curve.extend(json.loads(outs[0].split("CURVE")[-1]))
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
    p.add_argument("--task", choices=("mlp", "gpt"), default="mlp",
                   help="mlp: throughput vs DDP; gpt: sync vs async convergence")
    p.add_argument("-n", type=int, default=2, help="workers (DDP ranks)")
    p.add_argument("--servers", type=int, default=1)
    p.add_argument("--rows", type=int, default=None, help="batch per worker (mlp 64, gpt 16)")
    p.add_argument("--steps", type=int, default=None, help="steps per worker (mlp 20, gpt 300)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--lr", type=float, default=None, help="server learning rate (mlp 0.01, gpt 3e-3)")
    p.add_argument("--optimizer", choices=("sgd", "adam"), default=None, help="server update (mlp sgd, gpt adam)")
    p.add_argument("--staleness", type=int, default=2, help="async bound (gpt task)")
    p.add_argument("--slow-ms", type=float, default=5.0, help="gpt task, async: worker 1 sleeps this per step")
    p.add_argument("--corpus-bytes", type=int, default=300_000, help="gpt task: text read from the stdlib")
    p.add_argument("--simulate", action="store_true",
                   help="gpt task: one-process simulation of sync vs sequential vs lock-step updates")
    p.add_argument("--role", default=None, help=argparse.SUPPRESS)
    p.add_argument("--ddp-worker", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.role:
        return _role(json.loads(args.role))
    gpt = args.task == "gpt"
    args.rows = args.rows or (16 if gpt else 64)
    args.steps = args.steps or (300 if gpt else 20)
    args.lr = args.lr or (3e-3 if gpt else 0.01)
    args.optimizer = args.optimizer or ("adam" if gpt else "sgd")
    if args.ddp_worker or _config.launch_info().launcher != "none":
        return _ddp_worker(args)
    if gpt:
        return _gpt_simulate(args) if args.simulate else _gpt_report(args)
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


def _gpt_simulate(args) -> int:
    """One process, no sockets: sync (Adam on the mean of two workers' gradients) against two
    workers' gradients applied one after the other as steps of lr/2, the second computed after
    the first step ("sequential", no staleness) or at the same parameters ("lock-step",
    staleness 1, what async with staleness 0 does)."""
    print(f"one-process simulation, GPT task, {args.optimizer} lr {args.lr:g}, 2 workers x {args.rows} rows")
    for mode in ("sync", "sequential", "lock-step"):
        print(f"{mode:<11} held-out loss at round " + ", ".join(_simulate_one(args, mode)), flush=True)
    return 0


def _simulate_one(args, mode) -> list:
    from shardflow.distributed.ps.optim import make_shard_optimizer

    model, batch, held_out = _gpt_task({"corpus_bytes": args.corpus_bytes, "rows": args.rows})
    params = list(model.parameters())
    flat = np.concatenate([p.numpy().reshape(-1) for p in params])
    opt = make_shard_optimizer(args.optimizer, args.lr)
    marks = {round(args.steps * k / 4) for k in range(5)}

    def load():
        off = 0
        for p in params:
            p.array[...] = flat[off:off + p.array.size].reshape(p.array.shape)
            off += p.array.size

    def grad(w, t):
        load()
        x, y = batch(1000003 * w + t)
        model.zero_grad()
        model(x, y)[1].backward()
        return np.concatenate([p.grad.numpy().reshape(-1) for p in params])

    curve = []
    for t in range(args.steps + 1):
        if t in marks:
            load()
            curve.append(f"{t}: {held_out():.4f}")
        if t == args.steps:
            break
        if mode == "sync":
            opt.step(flat, (grad(0, t) + grad(1, t)) / 2)
        elif mode == "sequential":
            opt.step(flat, grad(0, t), 0.5)
            opt.step(flat, grad(1, t), 0.5)
        else:
            g0, g1 = grad(0, t), grad(1, t)
            opt.step(flat, g0, 0.5)
            opt.step(flat, g1, 0.5)
    return curve


def _gpt_report(args) -> int:
    cs, ca = [], []
    rs, ra = _ps_run(args, "sync", 0, cs), _ps_run(args, "async", args.staleness, ca)
    print(f"GPT (2 layers, n_embd 64, block 32, char corpus), batch {args.rows} per worker, {args.n} workers, "
          f"{args.servers} server(s), {args.optimizer} lr {args.lr:g} on the servers; async: staleness "
          f"{args.staleness}, worker 1 slowed {args.slow_ms:g} ms/step")
    print(f"{'step':>6} | {'sync held-out loss':>18} | {'async held-out loss':>19} | {'async/sync':>10}")
    for (t, a), (_, b) in zip(cs, ca):
        print(f"{t:>6} | {a:18.4f} | {b:19.4f} | {b / a:10.3f}")
    print(f"steps/s per worker: sync {np.median(rs):.1f}, async {np.median(ra):.1f} (evaluation excluded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
