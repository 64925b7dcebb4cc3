"""``send_object_list``/``recv_object_list`` and ``all_reduce_coalesced``/
``all_gather_coalesced`` on 2 MPI ranks against torch's gloo in the same processes
(``torch_compat/run_dist_object_p2p.py``)."""

from pathlib import Path

import pytest

from shardflow.testing.mpi import run_script

pytest.importorskip("torch")

PROGRAM = Path(__file__).parent / "torch_compat" / "run_dist_object_p2p.py"


def test_object_p2p_and_coalesced_collectives_match_torch():
    res = run_script(str(PROGRAM), n=2, timeout=180).check()
    assert res.output.count("OBJECT P2P OK") == 2, res.output
