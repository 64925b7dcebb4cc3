"""The `shardflow` command's dispatcher, `doctor`, and backend utilities."""

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
