"""Start RPC workers as plain processes (MASTER_ADDR/MASTER_PORT, RANK, WORLD_SIZE, a job
secret) and collect what they print: each worker prints ``RESULT <json>`` lines."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def free_port() -> int:
    """A port free now whose successor is free too (a program may rendezvous on both, as
    examples/rpc_ddp.py does)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue


@dataclass
class Worker:
    rank: int
    proc: subprocess.Popen
    out: str = ""
    err: str = ""
    elapsed: float = 0.0
    results: list = field(default_factory=list)

    def result(self):
        assert self.results, f"rank {self.rank} printed no RESULT (rc={self.proc.returncode})\n{self.out}\n{self.err}"
        return self.results[-1]


def worker_env(rank: int, world: int, port: int, secret: str | None, extra=None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI_", "SLURM_"))}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
               PYTHONPATH=ROOT + os.pathsep + env.get("PYTHONPATH", ""), OMP_NUM_THREADS="1",
               PYTHONUNBUFFERED="1")
    if secret is not None:
        env["SHARDFLOW_RPC_SECRET"] = secret
    env.update(extra or {})
    return env


def start(script: str, world: int, args=(), extra_env=None, secret: str | None = None,
          port: int | None = None) -> list[Worker]:
    """Start ``script`` (a file in this folder) on ``world`` workers."""
    port = port or free_port()
    secret = secret or secrets.token_hex(16)
    path = os.path.join(HERE, script)
    workers = []
    for r in range(world):
        env = worker_env(r, world, port, secret, (extra_env or {}).get(r))
        p = subprocess.Popen([sys.executable, path, *map(str, args)], env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        workers.append(Worker(r, p))
    return workers


def launch(script: str, world: int, args=(), timeout: float = 120.0, extra_env=None,
           secret: str | None = None, port: int | None = None, check: bool = True) -> list[Worker]:
    """Run ``script`` on ``world`` workers; wait for all of them (see ``finish``)."""
    return finish(start(script, world, args, extra_env, secret, port), script, timeout, check)


def finish(workers: list[Worker], script: str, timeout: float = 120.0, check: bool = True) -> list[Worker]:
    """Wait for started workers; kill them all and fail with their output at the timeout."""
    start = time.monotonic()
    deadline = start + timeout
    for w in workers:
        try:
            w.out, w.err = w.proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for v in workers:
                v.proc.kill()
            for v in workers:
                o, e = v.proc.communicate()
                v.out, v.err = v.out or o, v.err or e
            report = "\n".join(f"--- rank {v.rank} rc={v.proc.returncode}\n{v.out}\n{v.err}" for v in workers)
            raise AssertionError(f"{script}: workers did not finish within {timeout} s\n{report}")
        w.elapsed = time.monotonic() - start
        w.results = [json.loads(line[len("RESULT "):]) for line in w.out.splitlines()
                     if line.startswith("RESULT ")]
    if check:
        bad = [w for w in workers if w.proc.returncode != 0]
        if bad:
            report = "\n".join(f"--- rank {v.rank} rc={v.proc.returncode}\n{v.out}\n{v.err}" for v in workers)
            raise AssertionError(f"{script}: ranks {[w.rank for w in bad]} failed\n{report}")
    return workers
