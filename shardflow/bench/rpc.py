"""``shardflow bench rpc``: RPC latency and throughput, shardflow against PyTorch's RPC
(tensorpipe) in the same run.

Two plain processes per framework on this host (rank 0 calls, rank 1 serves; one BLAS
thread each, MASTER_ADDR 127.0.0.1), the same measuring code for both (only the modules
differ):

* **latency**: ``rpc_sync`` round trip of a function returning its argument, a one-element
  float32 tensor; mean over ``--calls`` calls after 200 warm-up calls;
* **throughput**: ``rpc_sync`` of the same function with a 1 MB and a 64 MB float32 tensor
  (``--sizes``): the tensor goes and comes back, so the rate is ``2 x size / round trip``;
  median over a run's repetitions (50 at 1 MB, 5 at 64 MB, scaled by ``--scale``).

The frameworks alternate ``--runs`` times (torch, shardflow, torch, ...) so that both see
the same machine load; reported: the median over runs and the ratio. Goal (docs/RPC.md):
shardflow's latency no higher and its throughput no lower than PyTorch's.

shardflow authenticates every message (HMAC-SHA256, with a Poly1305 one-time key for
payloads of 256 KiB and more sent over TCP; a payload read from the sender's memory is
covered by its frame's MAC over the addresses, docs/RPC.md); PyTorch's RPC authenticates
nothing. Both move a large tensor between processes of one host with one
``process_vm_readv`` (tensorpipe's "cma" channel, shardflow's ``rpc/cma.py``). ``--json PATH`` also
writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time

_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def echo(x):
    """The function both frameworks call (importable by name on the serving process)."""
    return x


def _measure(rpc, lib, calls: int, sizes, scale: float) -> dict:
    x = lib.zeros(1)
    for _ in range(200):
        rpc.rpc_sync("w1", echo, args=(x,))
    t0 = time.perf_counter()
    for _ in range(calls):
        rpc.rpc_sync("w1", echo, args=(x,))
    out = {"latency_us": (time.perf_counter() - t0) / calls * 1e6}
    for mb in sizes:
        t = lib.ones(int(mb * (1 << 20)) // 4)
        rpc.rpc_sync("w1", echo, args=(t,))
        reps = max(2, int((50 if mb <= 1 else 5) * scale))
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            back = rpc.rpc_sync("w1", echo, args=(t,))
            times.append(time.perf_counter() - t0)
        assert tuple(back.shape) == tuple(t.shape)
        out[f"{mb:g}MB_GBps"] = 2 * t.numel() * 4 / statistics.median(times) / 1e9
    return out


def _role(args) -> int:
    rank = int(os.environ["RANK"])
    if args.role == "torch":
        import torch as lib
        import torch.distributed.rpc as rpc
    else:
        import shardflow as lib
        import shardflow.distributed.rpc as rpc
    rpc.init_rpc(f"w{rank}", rank=rank, world_size=2,
                 rpc_backend_options=rpc.TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=300))
    if rank == 0:
        res = _measure(rpc, lib, args.calls, args.sizes, args.scale)
        print("RESULT " + json.dumps(res), flush=True)
    rpc.shutdown()
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(framework: str, args) -> dict:
    port, secret = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "shardflow.bench", "rpc", "--role", framework, "--calls", str(args.calls),
           "--sizes", ",".join(f"{s:g}" for s in args.sizes), "--scale", str(args.scale)]
    procs = []
    for rank in (0, 1):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "SLURM_"))}
        env.update(_THREADS, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE="2", SHARDFLOW_RPC_SECRET=secret)
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=args.timeout) for p in procs]
    for p, (_, e) in zip(procs, outs):
        if p.returncode != 0:
            raise RuntimeError(f"bench rpc: the {framework} run failed (exit {p.returncode}):\n{e[-3000:]}")
    line = [x for x in outs[0][0].splitlines() if x.startswith("RESULT ")]
    return json.loads(line[-1][len("RESULT "):])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="shardflow bench rpc", description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3, help="alternating runs per framework (median reported)")
    p.add_argument("--calls", type=int, default=2000, help="rpc_sync calls timed for the latency")
    p.add_argument("--sizes", type=lambda s: [float(x) for x in s.split(",")], default=[1.0, 64.0],
                   help="tensor sizes in MB for the throughput (comma list)")
    p.add_argument("--scale", type=float, default=1.0, help="scales the throughput repetitions")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--json", default=None, help="also write the results to this file")
    p.add_argument("--role", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.role:
        return _role(args)
    runs = {"torch": [], "shardflow": []}
    for _ in range(args.runs):
        for fw in ("torch", "shardflow"):
            runs[fw].append(_run(fw, args))
    keys = list(runs["torch"][0])
    med = {fw: {k: statistics.median(r[k] for r in rs) for k in keys} for fw, rs in runs.items()}
    print(f"RPC between 2 processes on this host, median of {args.runs} alternating runs; "
          f"shardflow authenticates every message, PyTorch does not")
    print(f"{'measure':<34} | {'torch (tensorpipe)':>18} | {'shardflow':>10} | shardflow / torch")
    for k in keys:
        t, s = med["torch"][k], med["shardflow"][k]
        if k == "latency_us":
            label, better = "rpc_sync latency, 4 B tensor (us)", "lower is better"
        else:
            label, better = f"{k[:-len('MB_GBps')]} MB tensor echo (GB/s)", "higher is better"
        print(f"{label:<34} | {t:18.3g} | {s:10.3g} | {s / t:5.2f}x ({better})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "median": med}, f, indent=1)
    return 0
