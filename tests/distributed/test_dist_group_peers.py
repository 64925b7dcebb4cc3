"""torch 2.6+'s group-rank peers (``group_src`` / ``group_dst``) and the newer ``new_group``
/ ``barrier`` keywords on 3 MPI ranks against torch's gloo in the same processes
(``torch_compat/run_dist_group_peers.py``)."""

from pathlib import Path

import pytest

from shardflow.testing.mpi import run_script

pytest.importorskip("torch")

PROGRAM = Path(__file__).parent / "torch_compat" / "run_dist_group_peers.py"


def test_group_rank_peers_match_torch():
    res = run_script(str(PROGRAM), n=3, timeout=180).check()
    assert res.output.count("GROUP PEERS OK") == 3, res.output
