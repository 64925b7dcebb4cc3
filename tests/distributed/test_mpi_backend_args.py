"""``init_process_group("mpi", rank=..., world_size=...)``: MPI assigns both, so torch ignores
them with a warning (PyTorch's distributed tutorial runs ``init_process(0, 0, run,
backend='mpi')`` under ``mpirun``); shardflow raised a ValueError for ``world_size=0``. torch
2.13's CPU wheel has no MPI backend to run, so the warning is compared with its source."""

import inspect
import warnings

import pytest

import shardflow.distributed as dist

torch = pytest.importorskip("torch")
import torch.distributed.distributed_c10d as c10d  # noqa: E402

WORDS = "are ignored since they are assigned by the MPI runtime."


def test_mpi_backend_ignores_rank_and_world_size_with_torchs_warning():
    source = inspect.getsource(c10d.init_process_group)  # torch's string is split over two lines
    assert '"are ignored since they are assigned by the "' in source and '"MPI runtime."' in source
    with pytest.warns(UserWarning, match=r"For MPI backend, world_size \(0\) and rank \(0\) " + WORDS):
        dist.init_process_group("mpi", rank=0, world_size=0)
    try:
        assert dist.get_world_size() == 1 and dist.get_rank() == 0 and dist.get_backend() == "mpi"
    finally:
        dist.destroy_process_group()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing given: no warning
        dist.init_process_group("mpi")
    dist.destroy_process_group()
    with pytest.raises(ValueError, match="init_process_group\\(world_size=2\\) but the launcher"):
        dist.init_process_group("gloo", rank=0, world_size=2)  # other backends still check
    assert not dist.is_initialized()  # refused before the world is made (session 36)
