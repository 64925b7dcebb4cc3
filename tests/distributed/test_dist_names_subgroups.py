"""``new_subgroups`` / ``new_subgroups_by_enumeration`` on 2 MPI ranks against torch's gloo in
the same processes (``torch_compat/run_dist_subgroups.py``)."""

from pathlib import Path

import pytest

from shardflow.testing.mpi import run_script

pytest.importorskip("torch")

PROGRAM = Path(__file__).parent / "torch_compat" / "run_dist_subgroups.py"


def test_subgroups_match_torch():
    res = run_script(str(PROGRAM), n=2, timeout=180).check()
    assert res.output.count("SUBGROUPS OK") == 2, res.output
