"""PyTorch's distributed checkpoint recipe and tensor-parallel examples on 2 processes, on
torch (gloo on the CPU) and, with only their imports changed, on shardflow (MPI), comparing
what each rank computes (the table is in docs/COMPAT.md, "Public programs").

* dcp_recipe (``recipes_source/distributed_checkpoint_recipe.rst``): its four programs as
  scripts -- save (FSDP + ``dcp.save`` of a ``Stateful`` AppState, processes started by
  ``mp.spawn``), load (FSDP, ``get_state_dict``, ``dcp.load``), the one-process load into a
  plain model and ``format_utils``' ``dcp_to_torch_save``. Two of the recipe's calls fail on
  torch as written (keys that are not the saved ones; ``dcp_to_torch_save`` given a file for
  a folder): shardflow must fail there too, and the programs' added ``app`` / ``back``
  arguments run what the recipe means.
* tensor_parallelism (pytorch/examples): ``tensor_parallel_example.py``,
  ``sequence_parallel_example.py`` and ``fsdp_tp_example.py`` (2-D mesh (dp=1, tp=2) on 2
  ranks; its ``llama2_model`` is a stand-in) as scripts under torchrun / ``shardflow run -n
  2`` (``programs/_launch.py``), every rank's loss per iteration.
* rpc/parameter_server (pytorch/examples): ``rpc_parameter_server.py`` as two commands
  (server and trainer), each starting its own process.

Time: the torch reference starts its processes itself (each child imports torch: 3-12 s on
the 2-core test machine), so these tests take longer than the suite's 8 s per test; the
shardflow half takes a few seconds per program.
"""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import shardflow
import shardflow.testing.parity  # the submodule: `import shardflow` does not load it
from shardflow.comm.launcher import rank_env

from .programs._harness import assert_close

pytestmark = [pytest.mark.mpi, pytest.mark.usefixtures("torch_single_thread")]

HERE = Path(__file__).parent / "programs"
# torch 2.13's own teardown of a gloo process group can abort a child after its work
# (see test_public_programs_multi.py): the torch reference is run again once on exactly that
_TORCH_TEARDOWN_ABORT = "terminate called without an active exception"


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _copy(directory: Path, source: Path, names, use_sf: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        text = (source / name).read_text()
        (directory / name).write_text(shardflow.testing.parity.rewrite_imports(text) if use_sf else text)
    return directory


def _python(directory: Path, script: str, argv=(), *, fails: bool = False, port: str = "",
            timeout: float = 120.0) -> str:
    """``python SCRIPT ARGV`` in ``directory`` (a program that starts its own processes);
    its output. ``fails``: the run must fail (its output is returned)."""
    env = rank_env({"OMP_NUM_THREADS": "1", "RECIPE_PORT": port or _free_port()})
    env.pop("PYTHONUNBUFFERED", None)
    for _attempt in (1, 2):
        proc = subprocess.run([sys.executable, script, *argv], cwd=directory, env=env,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode == 0 or fails or _TORCH_TEARDOWN_ABORT not in proc.stderr:
            break
    out = proc.stdout + proc.stderr
    if fails:
        assert proc.returncode != 0, f"{script} should have failed:\n{out}"
    else:
        assert proc.returncode == 0, f"{script} failed (rc={proc.returncode}):\n{out}"
    return out


# -- distributed checkpoint recipe ------------------------------------------------------------

DCP_RECIPE = HERE / "dcp_recipe"
DCP_FILES = ("save.py", "load.py", "load_single.py", "formats.py")


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    """Both runs' folders, each with the programs, the start weights, the inputs and the
    checkpoint save.py wrote on 2 spawned ranks (one save per library for both tests)."""
    th_mod = shardflow.testing.parity.load_torch_file(DCP_RECIPE / "save.py", use_shardflow=False,
                                                      name="dcp_recipe_save_torch")
    torch.manual_seed(0)
    init = th_mod.ToyModel().state_dict()
    inputs = torch.rand(2, 8, 16)
    root = tmp_path_factory.mktemp("dcp_recipe")
    dirs = {}
    for name, use_sf in (("shardflow", True), ("torch", False)):  # shardflow first: it fails first
        d = _copy(root / name, DCP_RECIPE, DCP_FILES, use_sf)
        torch.save(init, d / "init.pt")
        torch.save(inputs, d / "inputs.pt")
        out = _python(d, "save.py")
        assert sorted(ln for ln in out.splitlines() if ln.startswith("Running")) == [
            "Running basic FSDP checkpoint saving example on rank 0.",
            "Running basic FSDP checkpoint saving example on rank 1.",
            "Running fsdp checkpoint example on 2 devices."], out
        dirs[name] = d
    return dirs, init


def _torch_load(path):
    return torch.load(path, weights_only=True)


def test_dcp_recipe_save_and_load_on_two_ranks_like_torch(recipe):
    """save.py: FSDP on 2 spawned ranks, one Adam step, dcp.save({"app": AppState}) (the
    Stateful's state_dict through get_state_dict); formats.py back: dcp_to_torch_save of each
    checkpoint (read by torch.load, whichever library wrote it) and torch_save_to_dcp. The
    saved model and Adam state (keyed net1.weight ..., FSDP's wrapper names left out) equal
    torch's to 1e-6. load.py as written loads keys the checkpoint does not have: both
    libraries fail naming model.net1.weight; load.py app (through AppState and
    set_state_dict) gives every rank the saved state, whole, as torch's, into the FSDP1 model
    and (load.py app fsdp2) into a fully_shard one."""
    dirs, init = recipe
    for name in ("shardflow", "torch"):
        _python(dirs[name], "formats.py", ["back"])
        assert (dirs[name] / "checkpoint_new").is_dir()
    th, sf = (_torch_load(dirs[n] / "torch_save_checkpoint.pth") for n in ("torch", "shardflow"))
    assert list(sf) == list(th) == ["app"] and sorted(sf["app"]) == sorted(th["app"]) == ["model", "optim"]
    assert list(sf["app"]["model"]) == list(th["app"]["model"]) == list(init)  # the saved order
    for k, v in th["app"]["model"].items():
        assert_close(sf["app"]["model"][k].numpy(), v.numpy(), f"saved {k}", rtol=1e-6, atol=1e-7)
        assert not np.allclose(v.numpy(), init[k].numpy())  # the Adam step moved it
    assert sf["app"]["optim"]["param_groups"] == th["app"]["optim"]["param_groups"]
    assert list(sf["app"]["optim"]["state"]) == list(th["app"]["optim"]["state"]) == list(init)
    for k, st in th["app"]["optim"]["state"].items():
        for n, v in st.items():
            assert_close(sf["app"]["optim"]["state"][k][n].numpy(), v.numpy(), f"Adam {n} of {k}",
                         rtol=1e-6, atol=1e-7)
    # load.py as written: {"model": ..., "optimizer": ...} is not what save.py saved. torch
    # 2.13 fails there with "CheckpointException ranks:dict_keys([0, 1])" around "Missing key
    # in checkpoint state_dict: model.net1.weight." (seen when this test was written; its
    # spawned run is not repeated here, for time), shardflow must fail as well
    out = _python(dirs["shardflow"], "load.py", fails=True)
    assert "CheckpointException" in out and "'model.net1.weight'" in out and "missing" in out, out
    loaded = {}
    for name in ("shardflow", "torch"):
        for argv in (["app"], ["app", "fsdp2"]):  # into FSDP1, and into fully_shard (resharded)
            _python(dirs[name], "load.py", argv)
            loaded[name, argv[-1]] = [json.loads((dirs[name] / f"loaded_{r}.json").read_text()) for r in (0, 1)]
    for wrapper, r in [(w, r) for w in ("app", "fsdp2") for r in (0, 1)]:
        sf_r, th_r = loaded["shardflow", wrapper][r], loaded["torch", wrapper][r]
        assert list(sf_r["model"]) == list(th_r["model"]) == list(init)
        for k, v in th_r["model"].items():
            assert_close(sf_r["model"][k], v, f"{wrapper}, rank {r}: loaded {k}", rtol=1e-6, atol=1e-7)
            assert_close(v, th["app"]["model"][k].numpy(), f"{wrapper}, rank {r}: torch loaded {k}", rtol=1e-6)
        assert sorted(sf_r["optim"]) == sorted(th_r["optim"]) == sorted(init)
        for k, st in th_r["optim"].items():
            for n, v in st.items():
                assert_close(sf_r["optim"][k][n], v, f"{wrapper}, rank {r}: loaded Adam {n} of {k}",
                             rtol=1e-6, atol=1e-7)


def test_dcp_recipe_single_process_load_and_formats_like_torch(recipe):
    """The recipe's one-process programs on a checkpoint each library saved on 2 ranks:
    load_single.py as written (keys under "model", the checkpoint's under "app") and
    formats.py as written (dcp_to_torch_save given the torch.save file as its DCP folder)
    fail in both; load_single.py app loads the saved model into a plain ToyModel, as
    torch's, with torch's one-process UserWarning; format_utils' command line converts as
    torch's."""
    dirs, init = recipe
    for name in ("shardflow", "torch"):
        out = _python(dirs[name], "load_single.py", fails=True)
        assert "CheckpointException" in out and "model.net1.weight" in out, out
        out = _python(dirs[name], "formats.py", fails=True)
        assert "CheckpointException" in out and "torch_save_checkpoint.pth" in out, out
        out = _python(dirs[name], "load_single.py", ["app"])
        assert "UserWarning: torch.distributed is disabled, unavailable or uninitialized, assuming the " \
               "intent is to load in a single process." in out, (name, out)
    th, sf = (json.loads((dirs[n] / "single.json").read_text()) for n in ("torch", "shardflow"))
    saved = _torch_load(dirs["torch"] / "torch_save_checkpoint.pth")["app"]["model"]
    assert list(sf) == list(th) == list(init)
    for k, v in th.items():
        assert_close(sf[k], v, f"single-process load of {k}", rtol=1e-6, atol=1e-7)
        assert_close(v, saved[k].numpy(), f"torch's single-process load of {k}", rtol=0)
    # the command line (python -m ...format_utils MODE SRC DST), each library's own
    outs = {}
    for name, module in (("shardflow", "shardflow"), ("torch", "torch")):
        d = dirs[name]
        cmd = [sys.executable, "-m", f"{module}.distributed.checkpoint.format_utils"]
        first = subprocess.run([*cmd, "dcp_to_torch", "checkpoint", "cli.pth"], cwd=d, env=rank_env(),
                               capture_output=True, text=True, timeout=60)
        second = subprocess.run([*cmd, "torch_to_dcp", "missing.pth", "x"], cwd=d, env=rank_env(),
                                capture_output=True, text=True, timeout=60)
        assert first.returncode == second.returncode == 0, (first.stderr, second.stderr)
        outs[name] = first.stdout + second.stdout
    assert outs["shardflow"] == outs["torch"], outs
    th_cli, sf_cli = (_torch_load(dirs[n] / "cli.pth")["app"]["model"] for n in ("torch", "shardflow"))
    for k, v in th_cli.items():
        assert_close(sf_cli[k].numpy(), v.numpy(), f"command line: {k}", rtol=1e-6, atol=1e-7)


# -- tensor parallelism examples ---------------------------------------------------------------

TP = HERE / "tensor_parallelism"
LAUNCH = "tests.parity.programs._launch"


def _torchrun(spec: Path, cwd: Path, timeout: float = 180.0, env=None) -> str:
    """``python -m torch.distributed.run --standalone --nproc-per-node 2 -m _launch SPEC``."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
           "-m", LAUNCH, str(spec)]
    env = rank_env({"OMP_NUM_THREADS": "1", **(env or {})})
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 or _TORCH_TEARDOWN_ABORT in out, f"torchrun failed:\n{out}"
    return out


def _shardflow_launch(spec: Path, cwd: Path, timeout: float = 180.0, env=None) -> str:
    from shardflow.testing.mpi import launch_cli

    here = os.getcwd()
    os.chdir(cwd)
    try:
        res = launch_cli(["-n", "2", "-m", LAUNCH, str(spec)], timeout=timeout,
                         env={"OMP_NUM_THREADS": "1", **(env or {})})
    finally:
        os.chdir(here)
    res.check()
    return "\n".join(re.sub(r"^\[rank \d+\] ", "", ln) for ln in res.output.splitlines())


def _losses(out: str) -> dict:
    # torchrun's ranks write unbuffered, so two ranks' lines may run together: no anchors
    pattern = r"rank (\d) iter (\d+) loss (-?\d+\.\d+(?:e[-+]\d+)?)"
    return {(int(m[1]), int(m[2])): float(m[3]) for m in re.finditer(pattern, out)}


def _toy_init() -> dict:
    torch.manual_seed(0)
    return {"in_proj.weight": torch.randn(32, 10) * 0.3, "in_proj.bias": torch.randn(32) * 0.1,
            "out_proj.weight": torch.randn(5, 32) * 0.2, "out_proj.bias": torch.randn(5) * 0.1}


def _run_tp(tmp_path, script: str, init=None, draws=("rand",), modules=(), env=None,
            runs=(("shardflow", True), ("torch", False))):
    """The runs (``(folder name, on shardflow?)``) of ``script`` from the same weights
    (``init``; the ToyModel's by default) and the same random draws: {name: (output, losses)}."""
    init = _toy_init() if init is None else init
    done = {}
    for name, use_sf in runs:
        d = tmp_path / name
        (d / "out").mkdir(parents=True)
        torch.save(init, d / "init.pt")
        spec = d / "spec.json"
        spec.write_text(json.dumps({"script": str(TP / script), "shardflow": use_sf, "argv": [],
                                    "draws": list(draws), "out": str(d / "out"),
                                    "modules": [[m, str(TP / f"{m}.py")] for m in modules]}))
        out = (_shardflow_launch if use_sf else _torchrun)(spec, d, env=env)
        done[name] = (out, _losses(out))
    return done


def test_sequence_parallel_example_trains_like_torch(tmp_path):
    """sequence_parallel_example.py: each rank's 20 rows sharded Shard(0) into the
    column-wise in_proj, reduce-scattered out of the row-wise out_proj, AdamW on the DTensor
    parameters: every rank's loss of every iteration to 1e-5."""
    runs = _run_tp(tmp_path, "sequence_parallel_example.py")
    (sf_out, sf), (th_out, th) = runs["shardflow"], runs["torch"]
    assert sorted(th) == [(r, i) for r in (0, 1) for i in range(4)], th_out
    assert sorted(sf) == sorted(th), sf_out
    keys = sorted(th)
    assert_close([sf[k] for k in keys], [th[k] for k in keys], "loss per rank and iteration", rtol=1e-5)
    assert th[(0, 0)] != th[(0, 3)]  # it trains
    mesh = "Device Mesh created: device_mesh=DeviceMesh((2,), 'cpu', stride=(1,))"
    assert mesh in th_out and mesh in sf_out, sf_out


def _one_process_losses(init: dict, steps: bool) -> list:
    """The ToyModel in one torch process on the runs' shared torch.rand draws (NumPy's
    generator seeded 0, as ``same_draws``), with AdamW(lr=0.25) steps or none."""
    model = torch.nn.Sequential()
    model.in_proj, model.relu, model.out_proj = torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5)
    model.load_state_dict(init)
    opt = torch.optim.AdamW(model.parameters(), lr=0.25, foreach=True)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(4):
        out = model(torch.from_numpy(rng.random((20, 10)).astype(np.float32))).sum()
        out.backward()
        losses.append(out.item())
        if steps:
            opt.step()
    return losses


def test_tensor_parallel_example_as_written_trains_where_torch_does_not(tmp_path):
    """tensor_parallel_example.py as written makes AdamW *before* parallelize_module. In
    torch that optimizer holds the parameters parallelize_module then replaced (by DTensor
    parameters), so its steps change nothing: every iteration's loss is the initial model's
    (checked against one torch process without steps). shardflow lays the parameters out in
    place, so the same optimizer trains: its losses are one torch process's with AdamW steps
    (the run torch gives with the optimizer made after parallelize_module). A deliberate
    deviation (docs/COMPAT.md); iteration 0, before any step, agrees to 1e-5 on both ranks."""
    runs = _run_tp(tmp_path, "tensor_parallel_example.py")
    (sf_out, sf), (th_out, th) = runs["shardflow"], runs["torch"]
    assert sorted(th) == [(r, i) for r in (0, 1) for i in range(4)], th_out
    assert sorted(sf) == sorted(th), sf_out
    init = _toy_init()
    frozen, trained = _one_process_losses(init, steps=False), _one_process_losses(init, steps=True)
    for r in (0, 1):
        assert_close(th[(r, 0)], sf[(r, 0)], f"rank {r}: iteration 0", rtol=1e-5)
        assert_close([th[(r, i)] for i in range(4)], frozen, f"rank {r}: torch's losses, no step", rtol=1e-5)
        assert_close([sf[(r, i)] for i in range(4)], trained, f"rank {r}: shardflow's losses, AdamW", rtol=1e-5)
    assert abs(trained[3] - frozen[3]) > 1.0
    mesh = "Device Mesh created: device_mesh=DeviceMesh((2,), 'cpu', stride=(1,))"
    assert mesh in th_out and mesh in sf_out, sf_out


def test_fsdp_tp_example_trains_like_torch(tmp_path):
    """fsdp_tp_example.py on 2 ranks, the (dp=1, tp=2) mesh as written: tensor and sequence
    parallel Llama blocks (SequenceParallel norms, PrepareModuleInput, local head counts),
    wrapped with fully_shard over the one-rank dp mesh (FSDP2=1), then as written with FSDP1's
    FullyShardedDataParallel, on which torch 2.13 fails on CPUs ("Cannot writeback when the
    parameter shape changes"; not rerun here) and shardflow gives fully_shard's losses. torch.randint's tokens
    are the same shared draws on every rank. Every rank's loss of every iteration to 1e-5;
    the printed 2-D mesh and model (``FSDPTransformer(...)``). (A dp mesh of 2 ranks over tensor-parallel parameters, TP_SIZE=1,
    is refused by shardflow with NotImplementedError: docs/COMPAT.md.)"""
    th_mod = shardflow.testing.parity.load_torch_file(TP / "llama2_model.py", use_shardflow=False,
                                                      name="tp_llama2_model_torch")
    torch.manual_seed(0)
    model = th_mod.Transformer.from_model_args(th_mod.ModelArgs(dim=16, n_layers=2, n_heads=4, vocab_size=64,
                                                                max_seq_len=16))
    runs = _run_tp(tmp_path, "fsdp_tp_example.py", init=model.state_dict(), draws=["randint"],
                   modules=["log_utils", "llama2_model"], env={"FSDP2": "1"})
    (sf_out, sf), (th_out, th) = runs["shardflow"], runs["torch"]
    assert sorted(th) == [(r, i) for r in (0, 1) for i in range(4)], th_out
    assert sorted(sf) == sorted(th), sf_out
    keys = sorted(th)
    assert_close([sf[k] for k in keys], [th[k] for k in keys], "loss per rank and iteration", rtol=1e-5)
    assert th[(0, 0)] != th[(0, 3)]  # it trains
    mesh = "Device Mesh created: device_mesh=DeviceMesh((dp=1, tp=2), 'cpu', stride=((), 1))"
    assert mesh in th_out, th_out
    assert mesh in sf_out, sf_out

    def logged_model(out):  # rank 0's log of print(sharded_model), its time stamp left out
        block = out[out.index("Model after parallelization"):out.index("Creating AdamW")]
        return re.sub(r"\n\d\d/\d\d/\d{4} \d\d:\d\d:\d\d [AP]M ", "\n", block)

    assert logged_model(sf_out) == logged_model(th_out), (sf_out, th_out)
    assert "sharded_model=FSDPTransformer(" in th_out
    # as written (FSDP1's FullyShardedDataParallel over the one-rank dp mesh): torch 2.13
    # fails on CPUs in its first forward ("Cannot writeback when the parameter shape changes",
    # seen when this test was written; not rerun here, for time); shardflow trains as
    # fully_shard does
    written = _run_tp(tmp_path / "fsdp1", "fsdp_tp_example.py", init=model.state_dict(), draws=["randint"],
                      modules=["log_utils", "llama2_model"], runs=(("shardflow", True),))
    sf1 = written["shardflow"][1]
    assert sorted(sf1) == keys, written["shardflow"][0]
    assert_close([sf1[k] for k in keys], [th[k] for k in keys], "FSDP1 as written: loss", rtol=1e-5)


# -- RPC parameter server ---------------------------------------------------------------------

RPC_PS = HERE / "rpc_parameter_server"
_STANDIN = '''"""The tests' torchvision stand-in over {lib} (tests/parity/programs/_torchvision_standin.py)."""
import sys

import {lib} as _lib
from tests.parity.programs._torchvision_standin import torchvision_modules

_mods = torchvision_modules(_lib, {{"train": 96, "test": 64}})
sys.modules.update({{k: v for k, v in _mods.items() if k != "torchvision"}})
datasets = _mods["torchvision.datasets"]
transforms = _mods["torchvision.transforms"]
'''


def _ps_net_init() -> dict:
    """The example's Net (its class, run by torch) seeded, as the server's start weights."""
    src = (RPC_PS / "main.py").read_text()
    ns = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "print": lambda *a, **k: None}
    exec(src[src.index("class Net(nn.Module):"):src.index("# --------- Helper Methods")], ns)
    torch.manual_seed(0)
    return ns["Net"]().state_dict()


def test_rpc_parameter_server_trains_like_torch(tmp_path):
    """rpc_parameter_server.py as its README runs it: `--rank=0` (the parameter server) and
    `--rank=1` (a trainer) as two commands, each starting its torch.multiprocessing.Process,
    rendezvous at --master_port; the trainer's remote forward, dist_autograd.backward,
    get_dist_gradients and DistributedOptimizer(SGD) steps on the server's RRefs, then the
    accuracy pass. Every printed batch loss to 1e-5 and the accuracy equal; the server's
    lines ("RPC shutdown on parameter server.") in both."""
    init = _ps_net_init()
    outs = {}
    for name, lib in (("shardflow", "shardflow"), ("torch", "torch")):
        d = _copy(tmp_path / name, RPC_PS, ("main.py",), lib == "shardflow")
        (d / "torchvision").mkdir()
        (d / "torchvision" / "__init__.py").write_text(_STANDIN.format(lib=lib))
        torch.save(init, d / "net_init.pt")
        env = rank_env({"OMP_NUM_THREADS": "1"})
        env.pop("PYTHONUNBUFFERED", None)
        port = _free_port()
        argv = [sys.executable, "main.py", "--world_size=2", f"--master_port={port}"]
        server = subprocess.Popen([*argv, "--rank=0"], cwd=d, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        try:
            trainer = subprocess.run([*argv, "--rank=1"], cwd=d, env=env, capture_output=True, text=True,
                                     timeout=150)
            server_out, _ = server.communicate(timeout=60)
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
        assert trainer.returncode == 0 and server.returncode == 0, (trainer.stdout, trainer.stderr, server_out)
        assert "RPC shutdown on parameter server." in server_out, server_out
        outs[name] = trainer.stdout
    losses = {n: [float(m) for m in re.findall(r"^Rank 1 training batch \d+ loss (\S+)$", o, re.M)]
              for n, o in outs.items()}
    assert len(losses["torch"]) == 3 and len(losses["shardflow"]) == 3, outs
    assert_close(losses["shardflow"], losses["torch"], "trainer's loss per batch", rtol=1e-5)
    acc = {n: re.findall(r"^Accuracy (\S+)$", o, re.M) for n, o in outs.items()}
    assert acc["shardflow"] == acc["torch"] and len(acc["torch"]) == 1, outs
