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


def start_plain(framework: str, path: str, world: int, args) -> subprocess.Popen:
    """Start ``path`` as ``world`` plain processes (forked after one import of the framework,
    see forked_world.py) with MASTER_ADDR/MASTER_PORT, RANK, WORLD_SIZE."""
    env = worker_env(0, world, free_port(), secrets.token_hex(16))
    return subprocess.Popen([sys.executable, os.path.join(HERE, "forked_world.py"), framework, str(world),
                             path, *args], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish_plain(proc: subprocess.Popen, timeout=240) -> dict:
    """The losses a started run printed (it must succeed)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    assert proc.returncode == 0, out[-2000:] + err[-4000:]
    return losses(out)


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
    theirs = start_plain("torch", torch_copy(name), world, args)   # both at once: importing
    ours = start_plain("shardflow", os.path.join(EXAMPLES, name), world, args)  # PyTorch is slow
    want, got = finish_plain(theirs), finish_plain(ours)
    try:
        compare(got, want, steps)
    except AssertionError:
        # PyTorch's own run of the parameter server gave a different step-2 loss once in
        # CI under load (2.144 against 2.180 in every other run of either framework). A
        # reference that changes between runs is not a reference: run it again, and if the
        # two runs of PyTorch disagree, shardflow must match the second; if they agree,
        # shardflow is the one that differs.
        again = finish_plain(start_plain("torch", torch_copy(name), world, args))
        if again == want:
            raise
        compare(got, again, steps)


@pytest.mark.mpi
def test_ddp_with_remote_embedding_matches_pytorch(torch_copy):
    steps = 3
    theirs = start_plain("torch", torch_copy("rpc_ddp.py"), 4, ["--steps", str(steps)])
    res = launch_cli(["-n", "4", "--no-prefix", os.path.join(EXAMPLES, "rpc_ddp.py"), "--steps", str(steps)],
                     timeout=240, env={"MASTER_PORT": str(free_port())})
    want = finish_plain(theirs)
    res.check()
    compare(losses(res.stdout), want, steps)
    assert sorted(want) == ["trainer0", "trainer1"]
