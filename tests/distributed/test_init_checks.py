"""Asking for the process group before it exists, and SHARDFLOW_DEBUG flags.

* ``dist.get_rank()`` / ``get_world_size()`` / a collective before ``init_process_group``
  raise PyTorch's ValueError (they used to answer 0 / 1 on every rank); what runs before
  init in the package (DataLoader sharding via ``comm.world_info()``, horovod, the train
  CLI) keeps working;
* an unknown ``SHARDFLOW_DEBUG`` flag raises, naming the known flags.
"""

import os
import subprocess
import sys

import pytest

from shardflow import _config
from shardflow.testing.mpi import program_command, run_program


def _torch_message() -> str:
    import torch.distributed as tdist

    with pytest.raises(ValueError) as info:
        tdist.get_rank()
    return str(info.value)


def test_rank_queries_before_init_raise_like_pytorch():
    # a fresh interpreter: in this one another test may already have made the world
    res = subprocess.run(program_command("tests.distributed.programs.rank_queries_before_init",
                                         [_torch_message()]),
                         capture_output=True, text=True, timeout=60)
    # nothing else on stdout: the only line is the runner's
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "shardflow.testing: main() passed on rank 0", res.stdout + res.stderr


@pytest.mark.mpi
def test_before_init_on_real_ranks():
    run_program("tests.distributed.programs.before_init_on_real_ranks", n=3, timeout=60).check()


def test_unknown_debug_flag_raises_naming_the_known_ones(monkeypatch):
    monkeypatch.setenv("SHARDFLOW_DEBUG", "collectives,colectives")
    with pytest.raises(ValueError, match="unknown flag.*'colectives'") as info:
        _config.debug_flags()
    for flag in _config.DEBUG_FLAGS:
        assert flag in str(info.value)
    assert set(_config.DEBUG_FLAGS) == {"collectives", "plan", "compile"}
    monkeypatch.setenv("SHARDFLOW_DEBUG", " Plan , collectives ")
    assert _config.debug_flags() == {"plan", "collectives"}
    assert _config.debug_plan() and _config.debug_collectives()
    monkeypatch.setenv("SHARDFLOW_DEBUG", "")
    assert _config.debug_flags() == frozenset() and not _config.debug_plan()


def test_unknown_debug_flag_stops_comm_init():
    env = dict(os.environ, SHARDFLOW_DEBUG="verbose")
    res = subprocess.run([sys.executable, "-c", "from shardflow import comm; comm.init()"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0
    assert "SHARDFLOW_DEBUG='verbose': unknown flag(s) 'verbose'" in res.stderr, res.stderr
