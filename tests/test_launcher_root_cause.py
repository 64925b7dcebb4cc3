"""The launcher names the rank that left a job early even when it exited with code 0
(prterun's "exiting improperly" report), instead of "no rank left a root-cause record"."""

import os
import sys
import textwrap

import pytest

from shardflow.cli.run import _root_cause
from shardflow.testing.mpi import launch_cli

PRTE_TEXT = """--------------------------------------------------------------------------
prterun has exited due to process rank 1 with PID 21646 on node vm exiting
improperly. There are three reasons this could occur:
"""


def test_root_cause_reads_prteruns_exiting_improperly():
    rank, code, kind, _ = _root_cause([], PRTE_TEXT.splitlines(), {}, 1)
    assert (rank, code) == (1, 0)
    assert "before the others" in kind


@pytest.mark.mpi
def test_rank_leaving_early_with_code_zero_is_named(tmp_path):
    script = tmp_path / "early.py"
    script.write_text(textwrap.dedent("""
        import os
        import shardflow as sf
        import shardflow.distributed as dist
        dist.init_process_group()
        if dist.get_rank() == 1:
            os._exit(0)
        dist.all_reduce(sf.ones(3))
    """))
    res = launch_cli(["-n", "2", "--comm-timeout", "30", sys.executable, os.fspath(script)], timeout=120)
    assert res.returncode != 0
    assert "first failing rank: 1" in res.output, res.output[-2000:]
