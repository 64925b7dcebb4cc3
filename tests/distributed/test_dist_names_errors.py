"""torch.distributed's exception classes, debug level, ``is_torchelastic_launched``,
``supports_complex`` (one process, against torch 2.13) and ``get_pg_count`` (2 MPI ranks,
against torch's gloo groups in the same processes)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import shardflow.distributed as dist
from shardflow.testing.mpi import run_script

torch_dist = pytest.importorskip("torch.distributed")

ROOT = Path(__file__).resolve().parents[2]


def test_exception_hierarchy_matches_torch():
    for name in ("DistError", "DistBackendError", "DistNetworkError", "DistStoreError"):
        ours, theirs = getattr(dist, name), getattr(torch_dist, name)
        assert [c.__name__ for c in ours.__mro__] == [c.__name__ for c in theirs.__mro__], name
    with pytest.raises(dist.DistError):
        raise dist.DistStoreError("timeout")
    assert not issubclass(dist.DistStoreError, dist.DistBackendError)


def test_debug_level_set_get_and_from_env(monkeypatch):
    assert [(k, int(v)) for k, v in dist.DebugLevel.__members__.items()] == \
        [(k, int(v)) for k, v in torch_dist.DebugLevel.__members__.items()]
    assert str(dist.DebugLevel.INFO) == str(torch_dist.DebugLevel.INFO) == "DebugLevel.INFO"
    before = dist.get_debug_level()
    try:
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        assert dist.get_debug_level() is dist.DebugLevel.DETAIL
        with pytest.raises(TypeError, match="DebugLevel"):
            dist.set_debug_level("INFO")  # torch refuses a string too (TypeError)
        assert dist.get_debug_level() is dist.DebugLevel.DETAIL  # unchanged by the bad call
        for raw, want in (("info", "INFO"), ("DETAIL", "DETAIL"), ("OFF", "OFF")):
            monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", raw)
            dist.set_debug_level_from_env()
            torch_dist.set_debug_level_from_env()
            assert dist.get_debug_level().name == torch_dist.get_debug_level().name == want
        monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "bogus")
        with pytest.raises(ValueError) as ours:
            dist.set_debug_level_from_env()
        with pytest.raises(ValueError) as theirs:
            torch_dist.set_debug_level_from_env()
        assert str(ours.value) == str(theirs.value)
        monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG")
        dist.set_debug_level_from_env()
        assert dist.get_debug_level() is dist.DebugLevel.OFF
    finally:
        dist.set_debug_level(before)
        torch_dist.set_debug_level(torch_dist.DebugLevel.OFF)


@pytest.mark.parametrize("run_id", [None, "", "job-7"])
def test_is_torchelastic_launched_follows_torchelastic_run_id(run_id):
    # a fresh process: the answer comes from the environment it was started with
    env = {k: v for k, v in os.environ.items() if k != "TORCHELASTIC_RUN_ID"}
    if run_id is not None:
        env["TORCHELASTIC_RUN_ID"] = run_id
    code = ("import shardflow.distributed as d, torch.distributed as t; "
            "print(d.is_torchelastic_launched(), t.is_torchelastic_launched())")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out[0] == out[1] == str(run_id is not None)


@pytest.mark.parametrize("level", [None, "info", "DETAIL"])
def test_debug_level_starts_from_the_environment(level):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DISTRIBUTED_DEBUG"}
    if level is not None:
        env["TORCH_DISTRIBUTED_DEBUG"] = level
    code = ("import shardflow.distributed as d, torch.distributed as t; "
            "print(d.get_debug_level(), t.get_debug_level())")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out[0] == out[1] == f"DebugLevel.{(level or 'OFF').upper()}"


def test_supports_complex_matches_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MAX", "MIN"):
        assert dist.supports_complex(getattr(dist.ReduceOp, name)) == \
            torch_dist.supports_complex(getattr(torch_dist.ReduceOp, name)), name


def test_get_pg_count_matches_torch_on_two_ranks():
    code = ROOT / "tests" / "distributed" / "torch_compat" / "run_dist_pg_count.py"
    res = run_script(str(code), n=2, timeout=120).check()
    assert res.output.count("PG COUNT OK") == 2, res.output
