"""PyTorch's distributed tutorials on 2 processes, on torch (gloo, the processes started as
the program starts them) and, with only their imports changed, on shardflow (MPI), comparing
what each rank prints (the table is in docs/COMPAT.md, "Public programs").

* dist_tuto (``intermediate_source/dist_tuto.rst``): torch runs its ``Process`` form as
  written; shardflow runs each ``run`` under ``shardflow run -n 2`` through the tutorial's
  "Environment Variable" initialization (``RANK``/``WORLD_SIZE``) and the SGD also through
  its MPI form (``init_process(0, 0, run, backend='mpi')``). A ``Process``-started child
  cannot join an MPI job: that form fails on shardflow with the error naming the fix.
* generic_join (``advanced_source/generic_join.rst``): ``Join`` with DDP, with DDP and
  ZeroRedundancyOptimizer, and with the tutorial's own ``Joinable``, each started by
  ``mp.spawn``.

Time: the torch reference starts its processes itself (each child imports torch: 3-12 s on
the 2-core test machine), so each test takes longer than the suite's 8 s per test; the
shardflow half takes 2-5 s per program.
"""

import ast
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import shardflow
import shardflow.testing.parity  # the submodule: `import shardflow` does not load it
from shardflow.comm.launcher import rank_env
from shardflow.testing.mpi import launch_cli

from .programs._harness import assert_close, printed_lines, run_in_own_session

pytestmark = [pytest.mark.mpi, pytest.mark.usefixtures("torch_single_thread")]

HERE = Path(__file__).parent / "programs"
# torch 2.13's own teardown of a gloo process group can abort a child after its work
# (see test_public_programs_multi.py): the torch reference is run again once on exactly that
_TORCH_TEARDOWN_ABORT = "terminate called without an active exception"


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _copy(directory: Path, source: Path, use_sf: bool) -> Path:
    """The program in ``directory``, imports rewritten for shardflow, and its fixed
    ``MASTER_PORT`` (29517 / 29518 as written) replaced by a port free now: with the tests
    spread over the cores (pytest-xdist) a fixed port was found in use twice in CI."""
    directory.mkdir(parents=True, exist_ok=True)
    text = re.sub(r"(os\.environ\['MASTER_PORT'\] = )'\d+'", rf"\1'{_free_port()}'", source.read_text())
    (directory / "main.py").write_text(shardflow.testing.parity.rewrite_imports(text) if use_sf else text)
    return directory


def _python(directory: Path, argv, timeout: float = 120.0) -> str:
    """``python main.py ARGV`` in ``directory`` (the program starts its own processes; output
    block-buffered, so each process writes its lines whole)."""
    env = rank_env({"OMP_NUM_THREADS": "1"})
    env.pop("PYTHONUNBUFFERED", None)
    for _attempt in (1, 2, 3):  # torch's gloo teardown abort (below) came twice in a row once
        proc = run_in_own_session([sys.executable, "main.py", *argv], cwd=directory, env=env, timeout=timeout)
        if proc.returncode == 0 or _TORCH_TEARDOWN_ABORT not in proc.stderr:
            break
    assert proc.returncode == 0, f"main.py failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _shardflow_run(directory: Path, argv, timeout: float = 120.0) -> str:
    """``shardflow run -n 2 main.py ARGV`` in ``directory``; the ranks' lines without their
    ``[rank R]`` prefixes."""
    here = os.getcwd()
    os.chdir(directory)
    try:
        res = launch_cli(["-n", "2", "main.py", *argv], timeout=timeout, env={"OMP_NUM_THREADS": "1"})
    finally:
        os.chdir(here)
    res.check()
    return "\n".join(re.sub(r"^\[rank \d+\] ", "", ln) for ln in res.output.splitlines())


def _lines(text: str, pattern: str) -> list:
    return printed_lines(text, rf"\b(?:{pattern})")  # \b: "10 inputs" is not cut at its "0 inputs"


# -- dist_tuto -----------------------------------------------------------------------------

DIST_TUTO = HERE / "dist_tuto" / "main.py"

_EXPECTED = {  # what torch prints (checked below too), and the lines the comparison takes
    "blocking": ["Rank  0  has data  tensor(1.)", "Rank  1  has data  tensor(1.)"],
    "nonblocking": ["Rank  0  has data  tensor(1.)", "Rank  1  has data  tensor(1.)",
                    "Rank 0 started sending", "Rank 1 started receiving"],
    "all_reduce": ["Rank  0  has data  tensor(2.)", "Rank  1  has data  tensor(2.)"],
    "ring": ["Rank  0  ring all-reduce  tensor([3., 3., 3.])",
             "Rank  1  ring all-reduce  tensor([3., 3., 3.])"],
}


@pytest.mark.parametrize("demo", sorted(_EXPECTED))
def test_dist_tuto_point_to_point_and_collectives_print_like_torch(tmp_path, demo):
    """send/recv, isend/irecv + wait, all_reduce on new_group([0, 1]) with the deprecated
    dist.reduce_op.SUM (torch's FutureWarning), and the ring all-reduce made of isend/recv:
    each rank's lines, tensors printed as torch prints them."""
    th = _python(_copy(tmp_path / "torch", DIST_TUTO, False), [demo])
    sf = _shardflow_run(_copy(tmp_path / "shardflow", DIST_TUTO, True), [demo, "env"])
    pattern = r"Rank "
    assert _lines(th, pattern) == _EXPECTED[demo], th
    assert _lines(sf, pattern) == _EXPECTED[demo], sf
    if demo == "all_reduce":
        warning = "FutureWarning: `torch.distributed.reduce_op` is deprecated"
        assert th.count(warning) == sf.count(warning) == 2, (th, sf)


def test_dist_tuto_synchronous_sgd_trains_like_torch(tmp_path):
    """The hand-written distributed SGD: DataPartitioner's halves of the data on each rank,
    average_gradients (all_reduce(SUM) of param.grad.data, then /= world size) after every
    backward, SGD with momentum; every rank's loss of each epoch to 1e-5, in the env form and
    in the tutorial's MPI form (whose init_process_group("mpi", rank=0, world_size=0) warns
    that MPI assigns them, as torch does)."""
    th_mod = shardflow.testing.parity.load_torch_file(DIST_TUTO, use_shardflow=False, name="dist_tuto_torch")
    torch.manual_seed(0)
    init = th_mod.Net().state_dict()
    runs = {}
    for name, use_sf, argv in (("torch", False, []), ("env", True, ["env"]), ("mpi", True, ["mpi"])):
        d = _copy(tmp_path / name, DIST_TUTO, use_sf)
        torch.save(init, d / "net_init.pt")
        out = (_shardflow_run if use_sf else _python)(d, ["sgd", *argv])
        runs[name] = {(int(m[1]), int(m[2])): float(m[3])
                      for m in re.finditer(r"^Rank  (\d) , epoch  (\d) :  (\S+)$", out, re.M)}
        if name == "mpi":
            assert out.count("For MPI backend, world_size (0) and rank (0) are ignored since they "
                             "are assigned by the MPI runtime.") == 2, out
    assert sorted(runs["torch"]) == [(r, e) for r in (0, 1) for e in (0, 1)], runs
    for name in ("env", "mpi"):
        assert sorted(runs[name]) == sorted(runs["torch"]), (name, runs)
        keys = sorted(runs["torch"])
        assert_close([runs[name][k] for k in keys], [runs["torch"][k] for k in keys],
                     f"{name}: loss per rank and epoch", rtol=1e-5)
    assert runs["torch"][(0, 1)] != runs["torch"][(1, 1)]  # the ranks saw different halves


def test_dist_tuto_process_form_fails_on_shardflow_with_the_fix(tmp_path):
    """As written, the tutorial starts its ranks with torch.multiprocessing.Process; such
    children cannot form an MPI job, so each child's init_process_group raises an error that
    says how to start the ranks instead (the parent, as in torch, only joins them)."""
    out = _python(_copy(tmp_path / "shardflow", DIST_TUTO, True), ["blocking"])
    assert out.count("ValueError: init_process_group(world_size=2) but the launcher started 1 "
                     "rank(s)") == 2, out
    assert "multiprocessing.Process) cannot form one process group" in out, out


# -- generic_join ----------------------------------------------------------------------------

GENERIC_JOIN = HERE / "generic_join" / "main.py"


@pytest.mark.parametrize("demo", ["ddp", "zero", "counter"])
def test_generic_join_tutorial_runs_like_torch(tmp_path, demo):
    """Join([model]) (DDP's own join: rank 0's 5 inputs against rank 1's 6, gradients
    accumulated without zero_grad: the joined rank keeps its 5.0, the last joiner's sixth
    all-reduce divides its 6.0 by the initial world size); Join([model, optim]) with
    ZeroRedundancyOptimizer(Adam); Join([counter], sync_max_count=True) with the tutorial's
    Counter/CounterJoinHook ("10 inputs processed before rank 0 joined!", "11 ... across
    all ranks!"). Every printed line equal, but for the ZeRO weight: torch's ZeRO gives each
    parameter to one rank (the weight to rank 0), and in the sixth iteration the joined rank 0
    steps it from its stale gradient; shardflow's shards are rows, a (1, 1) weight is stepped
    on every rank, and DDP's post hook keeps the last joiner's (measured: 0.441805 against
    torch's 0.441661; docs/COMPAT.md). The weight is checked to 1e-3 and to agree between
    the ranks; the bias, which both give to the last joiner, exactly."""
    outputs = {}
    for name, use_sf in (("shardflow", True), ("torch", False)):  # shardflow first: it fails first
        outputs[name] = _python(_copy(tmp_path / name, GENERIC_JOIN, use_sf), [demo])
    pattern = r"(Rank \d|\d+ inputs)"
    th, sf = _lines(outputs["torch"], pattern), _lines(outputs["shardflow"], pattern)
    if demo == "counter":
        assert th == ["10 inputs processed before rank 0 joined!", "11 inputs processed across all ranks!",
                      "11 inputs processed across all ranks!", "11 inputs processed before rank 1 joined!"]
    if demo != "zero":
        assert sf == th
        return
    assert [ln for ln in sf if "ZeRO" not in ln] == [ln for ln in th if "ZeRO" not in ln]
    params = {}
    for name, lines in (("torch", th), ("shardflow", sf)):
        ranks = [ast.literal_eval(ln.split("ZeRO params ")[1]) for ln in lines if "ZeRO params" in ln]
        assert len(ranks) == 2 and ranks[0] == ranks[1], (name, lines)
        params[name] = ranks[0]
    assert params["shardflow"][1] == params["torch"][1], params
    assert_close(params["shardflow"][0], params["torch"][0], "ZeRO weight", rtol=0, atol=1e-3)


# -- pytorch/examples distributed/ddp --------------------------------------------------------

DDP_EXAMPLE = HERE / "ddp_example" / "example.py"
# run_example.sh's torchrun line, for 2 processes (its port 5972 taken as a free one: tests run side by side)
TORCHRUN_ARGS = ["--nnodes=1", "--nproc_per_node=2", "--rdzv_id=101", "--rdzv_endpoint=localhost:{port}",
                 "example.py", "--local_world_size=2"]


def test_ddp_example_under_torchruns_command_line_prints_like_torch(tmp_path):
    """distributed/ddp/example.py started by run_example.sh's torchrun line (`python -m
    torch.distributed.run` / `python -m shardflow.distributed.run`, same options): each rank
    prints the environment it initialises from (the static rendezvous endpoint localhost:5972
    as MASTER_ADDR/MASTER_PORT: shardflow used 127.0.0.1:29500 before), its rank, world size
    and backend, and its (empty) device ids, then takes one DDP step. The lines are compared
    with the process ids taken out (the example prints no loss)."""
    outputs, port = {}, _free_port()
    args = [a.format(port=port) for a in TORCHRUN_ARGS]
    for name, module, use_sf in (("shardflow", "shardflow.distributed.run", True),
                                 ("torch", "torch.distributed.run", False)):
        d = tmp_path / name
        d.mkdir()
        text = DDP_EXAMPLE.read_text()
        (d / "example.py").write_text(shardflow.testing.parity.rewrite_imports(text) if use_sf else text)
        env = rank_env({"OMP_NUM_THREADS": "1"})
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            env.pop(k, None)
        for _attempt in (1, 2):
            proc = subprocess.run([sys.executable, "-m", module, *args], cwd=d, env=env,
                                  capture_output=True, text=True, timeout=120)
            if proc.returncode == 0 or use_sf or _TORCH_TEARDOWN_ABORT not in proc.stdout + proc.stderr:
                break
        assert proc.returncode == 0, f"{name} failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        # two ranks' prints can land on one line (seen under load): split before each "[pid]"
        text = re.sub(r"(?<=\S)(\[\d+\])", r"\n\1", proc.stdout)
        lines = [re.sub(r"^(\[rank \d+\] )?\[\d+\]:? ?", "", ln) for ln in text.splitlines()]
        outputs[name] = sorted(ln for ln in lines if ln.startswith(("Initializing", "world_size", "rank")))
    assert outputs["shardflow"] == outputs["torch"]
    assert len(outputs["torch"]) == 6 and "Initializing process group with: {'MASTER_ADDR': 'localhost', " \
        f"'MASTER_PORT': '{port}', 'RANK': '0', 'WORLD_SIZE': '2'}}" in outputs["torch"], outputs["torch"]
