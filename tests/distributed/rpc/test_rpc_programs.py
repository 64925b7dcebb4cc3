"""The four kinds of RPC program PyTorch documents (examples/rpc_*.py), each run twice with
the same text: on shardflow, and on PyTorch (CPU, tensorpipe) with the ``shardflow``
imports changed to ``torch``. Same initial weights and data (from NumPy), losses compared
step by step per trainer within 1e-5.

* parameter server, synchronous trainers (DistributedOptimizer on the server) and
  batched updates (async_execution, the model sent back to the trainers);
* distributed RNN: remote embedding and decoder, local LSTM, dist autograd;
* pipeline of two remote shards with micro-batches (remote + rpc_async + to_here);
* DDP trainers with a remote embedding table (RemoteModule): shardflow's run goes through
  ``shardflow run -n 4`` (DDP's collectives need MPI), the others as plain processes.
"""

import os
import re
import secrets
import subprocess
import sys

import pytest

from shardflow.testing.mpi import launch_cli

from .workers import HERE, ROOT, free_port, worker_env

EXAMPLES = os.path.join(ROOT, "examples")
LOSS = re.compile(r"(\S+) step (\d+) loss (\S+)")


def torch_source(path: str) -> str:
    """The program with its shardflow imports changed to torch's (nothing else)."""
    src = open(path).read()
    src = re.sub(r"^(\s*)import shardflow as torch\s*$", r"\1import torch", src, flags=re.M)
    src = re.sub(r"^(\s*)import shardflow\.", r"\1import torch.", src, flags=re.M)
    src = re.sub(r"^(\s*)from shardflow([.\w]*) import", r"\1from torch\2 import", src, flags=re.M)
    assert not re.search(r"^\s*(import|from) shardflow", src, flags=re.M)
    return src


def losses(output: str) -> dict:
    out: dict = {}
    for name, step, value in LOSS.findall(output):
        out.setdefault(name, []).append((int(step), float(value)))
    return {k: [v for _, v in sorted(steps)] for k, steps in out.items()}


def run_plain(framework: str, path: str, world: int, args, timeout=240) -> dict:
    """Run ``path`` as ``world`` plain processes (forked after one import of the framework,
    see forked_world.py) with MASTER_ADDR/MASTER_PORT, RANK, WORLD_SIZE; its losses."""
    env = worker_env(0, world, free_port(), secrets.token_hex(16))
    res = subprocess.run([sys.executable, os.path.join(HERE, "forked_world.py"), framework, str(world),
                          path, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=timeout)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return losses(res.stdout)


def compare(got: dict, want: dict, steps: int) -> None:
    assert sorted(got) == sorted(want) and want, (got, want)
    for name in want:
        assert len(want[name]) == steps and len(got[name]) == steps, (name, got, want)
        for step, (a, b) in enumerate(zip(got[name], want[name])):
            assert a == pytest.approx(b, abs=1e-5), f"{name} step {step}: shardflow {a}, torch {b}"


@pytest.fixture
def torch_copy(tmp_path):
    def make(name):
        path = tmp_path / name
        path.write_text(torch_source(os.path.join(EXAMPLES, name)))
        return str(path)
    return make


@pytest.mark.parametrize("name,world,steps", [
    ("rpc_parameter_server.py", 3, 3),
    ("rpc_batch_parameter_server.py", 3, 3),
    ("rpc_rnn.py", 2, 4),
    ("rpc_pipeline.py", 3, 3),
])
def test_program_matches_pytorch_step_by_step(name, world, steps, torch_copy):
    args = ["--steps", str(steps)]
    want = run_plain("torch", torch_copy(name), world, args)
    got = run_plain("shardflow", os.path.join(EXAMPLES, name), world, args)
    compare(got, want, steps)


@pytest.mark.mpi
def test_ddp_with_remote_embedding_matches_pytorch(torch_copy):
    steps = 3
    want = run_plain("torch", torch_copy("rpc_ddp.py"), 4, ["--steps", str(steps)])
    res = launch_cli(["-n", "4", "--no-prefix", os.path.join(EXAMPLES, "rpc_ddp.py"), "--steps", str(steps)],
                     timeout=240, env={"MASTER_PORT": str(free_port())})
    res.check()
    compare(losses(res.stdout), want, steps)
    assert sorted(want) == ["trainer0", "trainer1"]
