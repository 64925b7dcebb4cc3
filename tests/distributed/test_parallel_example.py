"""``examples/train_gpt_parallel.py`` runs unchanged as 1 rank, --dp 2, --tp 2 and
--dp 2 --tp 2, and every layout ends on the loss of one process (with gradient clipping,
whose norm over split gradients must be global)."""

import os
import re
import subprocess
import sys

import pytest

from shardflow.testing.mpi import launch_cli

pytestmark = pytest.mark.mpi

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "train_gpt_parallel.py")
ARGS = ["--steps", "4", "--n-layer", "1", "--n-embd", "32", "--block-size", "16", "--batch-size", "4"]


def _final_loss(text: str) -> float:
    m = re.search(r"final loss ([0-9.]+)", text)
    assert m, text[-3000:]
    return float(m.group(1))


def test_one_script_any_layout_same_loss():
    one = subprocess.run([sys.executable, EXAMPLE, *ARGS], capture_output=True, text=True, timeout=120)
    assert one.returncode == 0, one.stderr[-3000:]
    ref = _final_loss(one.stdout)
    for n, layout in ((2, ["--dp", "2"]), (2, ["--tp", "2"]), (4, ["--dp", "2", "--tp", "2"])):
        res = launch_cli(["-n", str(n), sys.executable, EXAMPLE, *ARGS, *layout], timeout=180)
        assert res.returncode == 0, res.output[-3000:]
        assert abs(_final_loss(res.stdout) - ref) < 2e-5, (layout, res.stdout[-800:], ref)


def test_dp_times_tp_must_equal_world_size():
    res = launch_cli(["-n", "2", sys.executable, EXAMPLE, *ARGS, "--dp", "2", "--tp", "2"], timeout=120)
    assert res.returncode != 0
    assert "dp x tp = 2 x 2 = 4, but the job has 2 rank(s)" in res.output
