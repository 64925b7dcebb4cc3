"""Every collective on real ranks (mpiexec, 2 and 3 ranks) against NumPy on random data.

Each rank rebuilds every rank's random input from its seed, so the expected value is an
independent NumPy computation. Non-contiguous views, zero-size arrays, float16/bfloat16,
integer dtypes, sub-groups, async handles and the Tensor API are all covered.
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [2, 3])
def test_comm_collectives_match_numpy(n):
    res = run_program("tests.distributed.programs.comm_collectives_match_numpy", n=n,
                      timeout=60).check()
    assert not res.leftover


@pytest.mark.parametrize("n", [2, 3])
def test_distributed_tensor_api(n):
    run_program("tests.distributed.programs.distributed_tensor_api", n=n, timeout=60).check()


def test_world_of_one_without_mpi():
    import numpy as np

    import shardflow as sf
    import shardflow.distributed as dist
    from shardflow import comm

    for fn in (dist.get_rank, dist.get_world_size):  # before init_process_group: PyTorch raises
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            fn()
    w = comm.LocalCommunicator()
    a = np.arange(6.0).reshape(2, 3)
    assert w.all_reduce(a.copy(), "avg").tolist() == a.tolist()
    assert w.all_gather(a).shape == (1, 2, 3)
    assert w.all_reduce(a.copy(), async_op=True).wait().tolist() == a.tolist()
    with pytest.raises(TypeError, match="floating-point"):
        w.all_reduce(np.arange(3), "avg")
    with pytest.raises(ValueError, match="unknown reduce op"):
        w.all_reduce(a, "median")
    t = sf.tensor([1.0, 2.0])
    assert comm.world_info().world_size in (1,)
    del t
