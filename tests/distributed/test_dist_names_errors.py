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


# Each fresh process gets one (TORCHELASTIC_RUN_ID, TORCH_DISTRIBUTED_DEBUG) pair and answers
# both questions, so the three run ids and the three debug levels cost three starts, not six.
ENV_CASES = [(None, None), ("", "info"), ("job-7", "DETAIL")]


@pytest.fixture(scope="module")
def fresh_process_answers():
    """For each case of ENV_CASES: the split stdout of a fresh process started with that
    environment, printing ``is_torchelastic_launched()`` and ``get_debug_level()`` from
    shardflow and from torch (the answers come from the environment it was started with)."""
    answers = {}
    code = ("import shardflow.distributed as d, torch.distributed as t; "
            "print(d.is_torchelastic_launched(), t.is_torchelastic_launched(), "
            "d.get_debug_level(), t.get_debug_level())")
    for run_id, level in ENV_CASES:
        env = {k: v for k, v in os.environ.items()
               if k not in ("TORCHELASTIC_RUN_ID", "TORCH_DISTRIBUTED_DEBUG")}
        if run_id is not None:
            env["TORCHELASTIC_RUN_ID"] = run_id
        if level is not None:
            env["TORCH_DISTRIBUTED_DEBUG"] = level
        answers[run_id, level] = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=120, check=True).stdout.split()
    return answers


@pytest.mark.parametrize("run_id", [case[0] for case in ENV_CASES])
def test_is_torchelastic_launched_follows_torchelastic_run_id(run_id, fresh_process_answers):
    case = next(c for c in ENV_CASES if c[0] == run_id)
    out = fresh_process_answers[case]
    assert out[0] == out[1] == str(run_id is not None), (case, out)


@pytest.mark.parametrize("level", [case[1] for case in ENV_CASES])
def test_debug_level_starts_from_the_environment(level, fresh_process_answers):
    case = next(c for c in ENV_CASES if c[1] == level)
    out = fresh_process_answers[case]
    assert out[2] == out[3] == f"DebugLevel.{(level or 'OFF').upper()}", (case, out)


def test_supports_complex_matches_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MAX", "MIN"):
        assert dist.supports_complex(getattr(dist.ReduceOp, name)) == \
            torch_dist.supports_complex(getattr(torch_dist.ReduceOp, name)), name


def test_get_pg_count_matches_torch_on_two_ranks():
    code = ROOT / "tests" / "distributed" / "torch_compat" / "run_dist_pg_count.py"
    res = run_script(str(code), n=2, timeout=120).check()
    assert res.output.count("PG COUNT OK") == 2, res.output
