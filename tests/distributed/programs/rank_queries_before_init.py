"""One plain process (no launcher): asking for the process group before it exists raises
PyTorch's ValueError and creates nothing; ``comm.world_info()`` answers without
initialising; ``init_process_group()`` then makes a world of one.

``argv[0]``: the start of PyTorch's own message (the test reads it from torch)."""

import shardflow as sf
import shardflow.distributed as dist
from shardflow import comm


def main(argv):
    expected = argv[0]
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
