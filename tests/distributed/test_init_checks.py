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
from shardflow.testing.mpi import run_mpi


def _torch_message() -> str:
    import torch.distributed as tdist

    with pytest.raises(ValueError) as info:
        tdist.get_rank()
    return str(info.value)


WORLD_OF_ONE = r"""
import sys
import shardflow as sf
import shardflow.distributed as dist
from shardflow import comm
expected = sys.argv[1]
t = sf.ones(2)
for call in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.get_local_rank,
             dist.barrier, lambda: dist.all_reduce(t)):
    try:
        call()
    except ValueError as e:
        assert str(e).startswith(expected), str(e)
        assert "dist.is_initialized()" in str(e)
    else:
        raise AssertionError(f"{call} did not raise before init_process_group")
assert not dist.is_initialized() and not comm.is_initialized()  # nothing was created
info = comm.world_info()  # what lower layers ask instead: never initialises anything
assert (info.rank, info.world_size, info.initialized) == (0, 1, False)
dist.init_process_group()
assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
dist.destroy_process_group()
print("ok")
"""


def test_rank_queries_before_init_raise_like_pytorch():
    # a fresh interpreter: in this one another test may already have made the world
    res = subprocess.run([sys.executable, "-c", WORLD_OF_ONE, _torch_message()],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout + res.stderr


BEFORE_INIT = r"""
import numpy as np
import shardflow as sf
import shardflow.distributed as dist
import shardflow.horovod as hvd
from shardflow import comm
from shardflow.utils.data import DataLoader, TensorDataset
try:
    dist.get_rank()
except ValueError as e:
    assert "Default process group has not been initialized" in str(e)
else:
    raise AssertionError("get_rank before init_process_group must raise")
try:
    hvd.rank()
except ValueError as e:
    assert "hvd.init()" in str(e)
else:
    raise AssertionError("hvd.rank before hvd.init must raise")
ds = TensorDataset(sf.arange(0, 6))
assert [int(v) for (b,) in DataLoader(ds, batch_size=4) for v in b.tolist()] == list(range(6))
dist.init_process_group()
r, n = dist.get_rank(), dist.get_world_size()
assert n == 3 and hvd.size() == 3 and hvd.rank() == r
print("ok", r, flush=True)
"""


@pytest.mark.mpi
def test_before_init_on_real_ranks():
    res = run_mpi(BEFORE_INIT, n=3, timeout=60).check()
    assert res.stdout.count("ok ") == 3, res.output


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
