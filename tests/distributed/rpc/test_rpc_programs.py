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

The plain-process runs of each framework go in one batch (forked_world.py --batch: one import
of the framework for all of them), the two batches at once, in a module fixture.
"""

import json
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


PROGRAMS = {  # name: (world, steps)
    "rpc_parameter_server.py": (3, 3),
    "rpc_batch_parameter_server.py": (3, 3),
    "rpc_rnn.py": (2, 4),
    "rpc_pipeline.py": (3, 3),
}
DDP_STEPS = 3


def start_batch(framework: str, runs: list, tmp) -> subprocess.Popen:
    """Start ``runs`` (``(name, path, world, args)``) at once, forked from one process that
    imports the framework once (forked_world.py --batch); each run's output goes to a file."""
    spec = [{"world": world, "program": path, "args": args, "out": str(tmp / f"{framework}-{name}.out")}
            for name, path, world, args in runs]
    (tmp / f"{framework}.json").write_text(json.dumps(spec))
    env = worker_env(0, 1, free_port(), secrets.token_hex(16))
    return subprocess.Popen([sys.executable, os.path.join(HERE, "forked_world.py"), framework, "--batch",
                             str(tmp / f"{framework}.json")], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish_batch(proc: subprocess.Popen, timeout=600) -> str:
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    return f"batch rc={proc.returncode}\n{out[-2000:]}{err[-4000:]}"


def batch_losses(tmp, framework: str, name: str, batch_log: str) -> dict:
    """The losses run ``name`` of a batch printed (it must have succeeded)."""
    path = tmp / f"{framework}-{name}.out"
    assert path.exists(), f"{framework} {name} did not run: {batch_log}"
    out = path.read_text()
    assert out.endswith("forked_world: exit 0\n"), f"{framework} {name} failed: {out[-12000:]}\n{batch_log}"
    return losses(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every program on PyTorch and (but rpc_ddp.py, which needs MPI) on shardflow: two
    batches at once, each paying its framework's import once instead of once per program."""
    tmp = tmp_path_factory.mktemp("rpc_programs")
    torch_runs, ours_runs = [], []
    for name, (world, steps) in [*PROGRAMS.items(), ("rpc_ddp.py", (4, DDP_STEPS))]:
        path = tmp / name
        path.write_text(torch_source(os.path.join(EXAMPLES, name)))
        torch_runs.append((name, str(path), world, ["--steps", str(steps)]))
        if name in PROGRAMS:
            ours_runs.append((name, os.path.join(EXAMPLES, name), world, ["--steps", str(steps)]))
    theirs = start_batch("torch", torch_runs, tmp)   # both at once: importing PyTorch is slow
    ours = start_batch("shardflow", ours_runs, tmp)
    logs = {"torch": finish_batch(theirs), "shardflow": finish_batch(ours)}
    torch_args = {name: (path, world, args) for name, path, world, args in torch_runs}

    def get(framework: str, name: str) -> dict:
        try:
            return batch_losses(tmp, framework, name, logs[framework])
        except AssertionError:
            if framework != "torch":
                raise  # shardflow's runs are never repeated
            # The reference crashed (PyTorch's fault, not ours: the test exists to compare
            # against it): run it once more on its own. Its failure, if repeated, is raised.
            path, world, args = torch_args[name]
            return finish_plain(start_plain("torch", path, world, args))
    return get


@pytest.fixture
def torch_copy(tmp_path):
    def make(name):
        path = tmp_path / name
        path.write_text(torch_source(os.path.join(EXAMPLES, name)))
        return str(path)
    return make


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch_step_by_step(name, runs, torch_copy):
    world, steps = PROGRAMS[name]
    want, got = runs("torch", name), runs("shardflow", name)
    try:
        compare(got, want, steps)
    except AssertionError:
        # PyTorch's own run of the parameter server gave a different step-2 loss once in
        # CI under load (2.144 against 2.180 in every other run of either framework). A
        # reference that changes between runs is not a reference: run it again, and if the
        # two runs of PyTorch disagree, shardflow must match the second; if they agree,
        # shardflow is the one that differs.
        again = finish_plain(start_plain("torch", torch_copy(name), world, ["--steps", str(steps)]))
        if again == want:
            raise
        compare(got, again, steps)


@pytest.mark.mpi
def test_ddp_with_remote_embedding_matches_pytorch(runs):
    res = launch_cli(["-n", "4", "--no-prefix", os.path.join(EXAMPLES, "rpc_ddp.py"), "--steps", str(DDP_STEPS)],
                     timeout=240, env={"MASTER_PORT": str(free_port())})
    res.check()
    want = runs("torch", "rpc_ddp.py")
    compare(losses(res.stdout), want, DDP_STEPS)
    assert sorted(want) == ["trainer0", "trainer1"]
