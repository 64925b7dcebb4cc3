"""``dist.batch_isend_irecv`` / ``dist.P2POp`` (PyTorch's names): the sends and receives of a
list start together and each gets a Work. On CPU ranks (MPI) every op is non-blocking; on
NCCL (host cuda: CuPy's host stand-in, whose fake NCCL does MPI on the host memory) the
device ops are one ``groupStart``/``groupEnd``. Every rank of a ring sends before it
receives, above MPI's eager limit: unbatched blocking sends would all wait on each other.
"""

import pytest

from shardflow.testing.mpi import run_program

from ._several import Launches, spec

RING_CPU, RING_CUDA = spec("batch_p2p_ring", "cpu"), spec("batch_p2p_ring", "cuda")


@pytest.fixture(scope="module")
def ring_launch():
    """Both rings in one launch of 3 ranks (~1.2 s of start-up saved): MPI, then NCCL."""
    return Launches({3: [RING_CPU, RING_CUDA]}, timeout={3: 240})


@pytest.mark.mpi
def test_batch_isend_irecv_ring_on_cpu_ranks(ring_launch):
    ring_launch.check(3, RING_CPU)


@pytest.mark.mpi
def test_batch_isend_irecv_ring_on_host_cuda_is_one_nccl_group(ring_launch):
    ring_launch.check(3, RING_CUDA)


@pytest.mark.mpi
def test_batch_isend_irecv_on_a_nccl_subgroup_takes_global_ranks():
    run_program("tests.distributed.programs.batch_p2p_nccl_subgroup", n=4, timeout=120).check()


def test_batch_isend_irecv_checks_its_ops():
    import numpy as np

    import shardflow as sf
    import shardflow.distributed as dist
    from shardflow.comm.base import check_p2p_ops

    t = sf.tensor(np.zeros(3, dtype=np.float32))
    with pytest.raises(ValueError, match="isend or dist.irecv"):
        dist.P2POp(dist.all_reduce, t, 0)
    with pytest.raises(ValueError, match="non-empty list"):
        dist.batch_isend_irecv([])
    with pytest.raises(ValueError, match="'send' or 'recv'"):
        check_p2p_ops([("bcast", t.array, 1, 0)], 2, 0)
    with pytest.raises(ValueError, match="itself"):
        check_p2p_ops([("send", t.array, 0, 0)], 2, 0)
    with pytest.raises(ValueError, match="outside the group"):
        check_p2p_ops([("recv", t.array, 2, 0)], 2, 0)
