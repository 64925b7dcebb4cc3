"""The `shardflow` command's dispatcher, `doctor`, and backend utilities."""

import os
import subprocess
import sys

import numpy as np
import pytest

import shardflow as sf
from shardflow.backend import dtypes, tune_allocator
from shardflow.cli.main import main


def test_help_and_unknown_command(capsys):
    assert main(["--help"]) == 0
    assert "run" in capsys.readouterr().out
    assert main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err


def test_doctor_reports_each_check():
    out = subprocess.run([sys.executable, "-m", "shardflow", "doctor", "-n", "64"],
                         capture_output=True, text=True, timeout=60)
    assert "mpiexec" in out.stdout and "BLAS threads" in out.stdout
    assert "64 ranks on" in out.stdout and "[WARN] ranks vs cores" in out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_tune_allocator_is_idempotent():
    assert tune_allocator() is True
    assert tune_allocator() is True
    a = np.ones((1024, 1024), np.float32)  # still allocates and frees normally
    assert float(a.sum()) == 1024 * 1024


@pytest.mark.parametrize("a,b,expected", [
    (dtypes.int64, dtypes.float16, dtypes.float16),
    (dtypes.uint8, dtypes.int8, dtypes.int16),
    (dtypes.float16, dtypes.bfloat16, dtypes.float32),
    (dtypes.bool_, dtypes.int32, dtypes.int32),
    (dtypes.int32, dtypes.float64, dtypes.float64),
])
def test_promote_types_matches_torch(a, b, expected):
    import torch

    assert dtypes.promote_types(a, b) is expected
    assert str(torch.promote_types(getattr(torch, a.name), getattr(torch, b.name))) == f"torch.{expected.name}"


def test_result_type_scalars_and_zero_dim_like_torch():
    import torch

    cases = [
        (sf.tensor([1, 2]), 2.5),
        (sf.tensor([1.0], dtype=sf.float16), 3.0),
        (sf.tensor([1.0], dtype=sf.float16), sf.tensor(2.0)),
        (sf.tensor([1], dtype=sf.int32), sf.tensor(5)),
        (sf.tensor([True]), 2),
    ]
    for a, b in cases:
        ta = torch.tensor(a.numpy())
        tb = torch.tensor(b.numpy()) if isinstance(b, sf.Tensor) else b
        assert str((a + b).dtype).split(".")[-1] == str((ta + tb).dtype).split(".")[-1], (a, b)


@pytest.mark.parametrize("args,needle", [
    (["-n", "0"], "-n/--nproc must be a positive number of ranks, got 0; fix: e.g. -n 2"),
    (["-n", "-3"], "got -3"),
    (["--timeout", "-1"], "--timeout must be a positive number of seconds, got -1"),
    (["--timeout", "0"], "--timeout must be a positive number of seconds, got 0"),
    (["--timeout", "nan"], "--timeout must be a positive number of seconds, got nan"),
    (["--comm-timeout", "0"], "--comm-timeout must be a positive number of seconds"),
    (["--grace", "-1"], "--grace must be 0 or more seconds, got -1"),
])
def test_run_refuses_bad_arguments_before_creating_anything(tmp_path, monkeypatch, capsys, args, needle):
    import tempfile

    from shardflow.cli.run import main as run_main

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a leaked job folder would go
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    assert run_main([*args, str(script)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert os.listdir(tmp_path) == ["s.py"]  # no shardflow-run-* folder left behind
