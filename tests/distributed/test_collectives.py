"""Every collective on real ranks (mpiexec, 2 and 3 ranks) against NumPy on random data.

Each rank rebuilds every rank's random input from its seed, so the expected value is an
independent NumPy computation. Non-contiguous views, zero-size arrays, float16/bfloat16,
integer dtypes, sub-groups, async handles and the Tensor API are all covered.
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


# One job per world size runs both programs, one after the other (the Tensor API one first:
# it initialises the process group by name and destroys it; the other then starts its own); each test checks its own case returned on every rank.
@pytest.fixture(scope="module")
def jobs():
    return {n: run_program("tests.distributed.programs.programs_in_one_job", n=n, timeout=90,
                           args=["distributed_tensor_api", "comm_collectives_match_numpy"])
            for n in (2, 3)}


def _case_ok(res, name, n):
    __tracebackhide__ = True
    res.check()  # exit code 0, no timeout, main() returned on every rank
    head = f"CASE {name} OK "
    done = {line[len(head):] for line in res.stdout.splitlines() if line.startswith(head)}
    assert done == {str(k) for k in range(n)}, f"case {name} did not return on every rank\n{res.output}"


@pytest.mark.parametrize("n", [2, 3])
def test_comm_collectives_match_numpy(n, jobs):
    _case_ok(jobs[n], "comm_collectives_match_numpy", n)
    assert not jobs[n].leftover


@pytest.mark.parametrize("n", [2, 3])
def test_distributed_tensor_api(n, jobs):
    _case_ok(jobs[n], "distributed_tensor_api", n)


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
    with pytest.raises(RuntimeError, match="floating-point"):  # torch's type
        w.all_reduce(np.arange(3), "avg")
    with pytest.raises(ValueError, match="unknown reduce op"):
        w.all_reduce(a, "median")
    t = sf.tensor([1.0, 2.0])
    assert comm.world_info().world_size in (1,)
    del t
