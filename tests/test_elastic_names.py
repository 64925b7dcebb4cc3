"""``shardflow.distributed.elastic``: the names torchrun scripts import, against torch 2.13's
(``@record`` and its error file, ``ChildFailedError``'s message, ``ProcessFailure``,
``get_logger``), and the rendezvous names' error pointing to ``shardflow run``."""

import json
import logging

import pytest

import shardflow.distributed.elastic.multiprocessing.errors as s_errors
from shardflow.distributed.elastic import rendezvous as s_rdzv
from shardflow.distributed.elastic.utils.logging import get_logger

torch = pytest.importorskip("torch")
import torch.distributed.elastic.multiprocessing.errors as t_errors  # noqa: E402
import torch.distributed.elastic.rendezvous as t_rdzv  # noqa: E402


def _fail(record, exc):
    @record
    def main(x):
        if exc is None:
            return x + 1
        raise exc

    return main


@pytest.mark.parametrize("exc", [ValueError("bad lr 3"), SystemExit(2), SystemExit(0), None])
def test_record_writes_torchs_error_file_and_reraises(tmp_path, monkeypatch, exc):
    got = {}
    for name, lib in (("torch", t_errors), ("shardflow", s_errors)):
        path = tmp_path / f"{name}.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))
        main = _fail(lib.record, exc)
        assert main.__name__ == "main"
        if exc is None or (isinstance(exc, SystemExit) and exc.code == 0):
            got[name] = (main(1), path.exists())
            continue
        with pytest.raises(type(exc)) as info:
            main(1)
        assert info.value is exc
        data = json.loads(path.read_text()) if path.exists() else None
        if data is not None:
            info = data["message"]["extraInfo"]
            assert "raise exc" in info.pop("py_callstack") and int(info.pop("timestamp")) > 0
        got[name] = data
    assert got["shardflow"] == got["torch"]
    if isinstance(exc, ValueError):
        assert got["torch"]["message"]["message"] == "ValueError: bad lr 3"


def test_record_without_error_file_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_ERROR_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyError):
        _fail(s_errors.record, KeyError("k"))(0)
    assert list(tmp_path.iterdir()) == []


def _child_files(tmp_path, lib, tag):
    files = {}
    for rank, stamp in ((0, 1700000100), (3, 1700000050)):
        f = tmp_path / f"{tag}_child{rank}.json"
        f.write_text(json.dumps({"message": {"message": f"RuntimeError: rank {rank}",
                                             "extraInfo": {"py_callstack": f"Traceback\n r{rank}",
                                                           "timestamp": str(stamp)}}}))
        files[rank] = lib.ProcessFailure(local_rank=rank, pid=100 + rank, exitcode=1,
                                         error_file=str(f))
    files[5] = lib.ProcessFailure(local_rank=1, pid=7, exitcode=-9, error_file="/nonexistent")
    files[5].timestamp = 1700000200  # made "now" by both: fixed to compare the messages
    return files


def test_child_failed_error_message_and_record_copy_root_cause(tmp_path, monkeypatch):
    msgs, copied = {}, {}
    for tag, lib in (("torch", t_errors), ("shardflow", s_errors)):
        failures = _child_files(tmp_path, lib, tag)
        assert (failures[5].error_file, failures[5].signal_name()) == ("<N/A>", "SIGKILL")
        assert failures[5].message == "Signal 9 (SIGKILL) received by PID 7"
        err = lib.ChildFailedError("trainer", failures)
        assert err.get_first_failure()[0] == 3
        msgs[tag] = str(err).replace(str(tmp_path / tag), "DIR")
        out = tmp_path / f"{tag}_parent.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(out))

        @lib.record
        def agent():
            raise lib.ChildFailedError("trainer", {3: failures[3]})

        with pytest.raises(lib.ChildFailedError):
            agent()
        copied[tag] = json.loads(out.read_text())
    assert msgs["shardflow"] == msgs["torch"]
    assert "Root Cause (first observed failure):\n[1]:" in msgs["torch"]
    assert copied["shardflow"] == copied["torch"]
    assert copied["torch"]["message"]["errorCode"] == 1  # the exit code written in
    with pytest.raises(ValueError, match="at least one failure"):
        s_errors.ChildFailedError("trainer", {})


def test_error_handler_subclass_hooks(tmp_path, monkeypatch):
    seen = []

    class Handler(s_errors.ErrorHandler):
        def initialize(self):
            seen.append("init")

        def record_exception(self, e):
            seen.append(type(e).__name__)

    with pytest.raises(OSError):
        s_errors.record(lambda: (_ for _ in ()).throw(OSError("x")), error_handler=Handler())()
    assert seen == ["init", "OSError"]
    assert type(s_errors.get_error_handler()) is s_errors.ErrorHandler


def test_get_logger_level_from_loglevel(monkeypatch):
    monkeypatch.delenv("LOGLEVEL", raising=False)
    assert get_logger("sf_elastic_a").level == logging.WARNING
    monkeypatch.setenv("LOGLEVEL", "DEBUG")
    assert get_logger("sf_elastic_b").level == logging.DEBUG
    assert get_logger().name == __name__  # the caller's module, as torch's


def test_rendezvous_names():
    for name in t_rdzv.__all__ if hasattr(t_rdzv, "__all__") else dir(t_rdzv):
        obj = getattr(t_rdzv, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            mine = getattr(s_rdzv, name)
            assert [b.__name__ for b in mine.__mro__] == [b.__name__ for b in obj.__mro__]
    with pytest.raises(NotImplementedError, match="shardflow run -n N script.py"):
        s_rdzv.RendezvousParameters(backend="c10d", endpoint="h:29400", run_id="1",
                                    min_nodes=1, max_nodes=2)
    with pytest.raises(NotImplementedError, match="docs/DISTRIBUTED.md"):
        s_rdzv.rendezvous_handler_registry.create_handler(None)
    from shardflow.distributed.elastic.multiprocessing import start_processes

    with pytest.raises(NotImplementedError, match="shardflow.multiprocessing.spawn"):
        start_processes("w", print, {}, {})


TORCHRUN_CASES = [
    ["--standalone", "--nproc_per_node=2", "train.py", "--lr", "3e-4"],
    ["--nnodes", "1:1", "--nproc-per-node", "3", "--max-restarts", "2", "-m", "pkg.train", "-x"],
    ["--rdzv-backend=c10d", "--rdzv-endpoint=localhost:0", "--master_port", "29611",
     "--no-python", "python", "train.py"],
]


@pytest.mark.parametrize("argv", TORCHRUN_CASES)
def test_torchrun_command_line_translated(argv, monkeypatch, tmp_path):
    import subprocess
    import sys

    from torch.distributed.run import get_args_parser as torch_parser

    from shardflow.distributed import run

    theirs = torch_parser().parse_args(argv)
    got, env = run.shardflow_run_argv(argv)
    n = got[got.index("-n") + 1]
    assert n == str(theirs.nproc_per_node)
    assert got[-len(theirs.training_script_args) - 1:] == \
        [theirs.training_script, *theirs.training_script_args]
    assert ("-m" in got) == theirs.module
    assert env == ({"MASTER_PORT": str(theirs.master_port)} if theirs.master_port else {})
    execs = []
    monkeypatch.setattr(run.os, "execv", lambda exe, args: execs.append(args))
    monkeypatch.delenv("MASTER_PORT", raising=False)
    run.main(argv)
    assert execs == [[sys.executable, "-m", "shardflow", "run", *got]]
    if argv is not TORCHRUN_CASES[0]:
        return  # one launcher start is enough to show shardflow run takes the translation
    (tmp_path / "train.py").write_text("")
    dry = subprocess.run([sys.executable, "-m", "shardflow", "run", "--dry-run", *got],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert dry.returncode == 0, dry.stderr  # shardflow run accepts what the translation gives
    assert f"-np {n}" in dry.stdout or f"-n {n}" in dry.stdout, dry.stdout


def test_torchrun_several_nodes_point_to_hosts(capsys):
    from shardflow.distributed import run

    with pytest.raises(ValueError, match="--hosts host1"):
        run.shardflow_run_argv(["--nnodes", "2", "--nproc-per-node", "4", "train.py"])
    with pytest.raises(SystemExit) as info:
        run.main(["--nproc-per-node", "zero", "train.py"])
    assert info.value.code == 2 and "expected a number" in capsys.readouterr().err


def test_deprecated_launch_passes_local_rank(monkeypatch, tmp_path, capsys):
    from shardflow.distributed import launch, launch_rank

    got, _ = launch.launch_argv(["--nproc_per_node=2", "train.py", "--use-env", "--lr", "3"])
    assert got == ["-n", "2", "-m", "shardflow.distributed.launch_rank", "train.py",
                   "--use-env", "--lr", "3"]  # the script's own --use-env is its argument
    got, _ = launch.launch_argv(["--use_env", "--nproc_per_node=2", "train.py", "--lr", "3"])
    assert got == ["-n", "2", "train.py", "--lr", "3"]
    with pytest.raises(ValueError, match="must also set the '--use-env' flag"):
        launch.launch_argv(["--no-python", "echo"])
    script = tmp_path / "probe.py"
    script.write_text("import sys\nprint('ARGV', sys.argv[1:], __name__)\n")
    monkeypatch.setenv("LOCAL_RANK", "3")
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("sys.argv", ["x"])
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    launch_rank.main([str(script), "--lr", "3"])
    assert "ARGV ['--local-rank=3', '--lr', '3'] __main__" in capsys.readouterr().out
    execs = []
    monkeypatch.setattr(launch.os, "execv", lambda exe, args: execs.append(args))
    with pytest.warns(FutureWarning, match="torch.distributed.launch is deprecated"):
        launch.main(["--nproc_per_node=2", "train.py"])
    assert execs[0][-3:] == ["-m", "shardflow.distributed.launch_rank", "train.py"]


@pytest.mark.parametrize("flags", [["--nproc_per_node=3"], ["--standalone", "--nnodes", "1", "--nproc-per-node", "3"]])
def test_shardflow_run_takes_torchrun_single_node_flags(flags, tmp_path):
    # `torchrun --standalone --nproc_per_node=3 train.py` with only the launcher's name changed
    import subprocess
    import sys

    (tmp_path / "train.py").write_text("")
    dry = subprocess.run([sys.executable, "-m", "shardflow", "run", "--dry-run", *flags, "train.py", "--lr", "1"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert "-np 3" in dry.stdout or "-n 3" in dry.stdout, dry.stdout
    assert dry.stdout.rstrip().endswith("train.py --lr 1"), dry.stdout


def test_shardflow_run_several_nnodes_points_to_hosts():
    from shardflow.cli import run as cli_run

    assert cli_run.main(["--nnodes=2", "--nproc-per-node=2", "train.py"]) == 2
