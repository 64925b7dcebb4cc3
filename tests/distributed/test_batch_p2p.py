"""``dist.batch_isend_irecv`` / ``dist.P2POp`` (PyTorch's names): the sends and receives of a
list start together and each gets a Work. On CPU ranks (MPI) every op is non-blocking; on
NCCL (host cuda: CuPy's host stand-in, whose fake NCCL does MPI on the host memory) the
device ops are one ``groupStart``/``groupEnd``. Every rank of a ring sends before it
receives, above MPI's eager limit: unbatched blocking sends would all wait on each other.
"""

import pytest

from shardflow.testing.mpi import run_mpi

RING = r"""
SETUP
import numpy as np
r, n = dist.get_rank(), dist.get_world_size()
nxt, prv = (r + 1) % n, (r - 1) % n
N = 16384  # 64 kB of float32: above the eager limit

def data(rank, k):
    return (np.arange(N, dtype=np.float32) + 1000 * rank + k).reshape(128, 128)

for k in range(3):
    right, left = sf.tensor(data(r, k), device=DEV), sf.tensor(data(r, -k), device=DEV)
    from_prv = sf.zeros(128, 128, device=DEV)
    from_nxt = sf.zeros(128, 128, device=DEV)
    v0 = from_prv._version[0]
    before = calls()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, right, nxt),
                                    dist.P2POp(dist.irecv, from_prv, prv),
                                    dist.P2POp(dist.isend, left, prv, tag=1),
                                    dist.P2POp(dist.irecv, from_nxt, nxt, tag=1)])
    assert len(works) == 4
    for w in works:
        assert w.wait() is True
    assert from_prv._version[0] > v0  # the receive bumped the tensor's version, as dist.irecv does
    assert from_prv.device.type == DEV
    np.testing.assert_array_equal(from_prv.cpu().numpy(), data(prv, k))
    np.testing.assert_array_equal(from_nxt.cpu().numpy(), data(nxt, -k))
    check_calls(before)

# dtypes and shapes of one batch may differ; ranks outside a pair just do nothing
if r < 2:
    peer = 1 - r
    a = sf.tensor(np.full((3, 5), r, dtype=np.int64), device=DEV)
    b = sf.zeros(3, 5, dtype=sf.int64, device=DEV)
    c = sf.tensor(np.full(7, r + 0.5, dtype=np.float64), device=DEV)
    d = sf.zeros(7, dtype=sf.float64, device=DEV)
    ops = [dist.P2POp(dist.irecv, b, peer), dist.P2POp(dist.isend, a, peer),
           dist.P2POp(dist.isend, c, peer, tag=2), dist.P2POp(dist.irecv, d, peer, tag=2)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    np.testing.assert_array_equal(b.cpu().numpy(), np.full((3, 5), peer))
    np.testing.assert_array_equal(d.cpu().numpy(), np.full(7, peer + 0.5))
dist.barrier()
print(f"rank {r}: ok", flush=True)
"""

CPU_SETUP = r"""
import shardflow as sf, shardflow.distributed as dist
dist.init_process_group("mpi")
DEV = "cpu"
calls = lambda: 0
def check_calls(before):
    pass
"""

CUDA_SETUP = r"""
from tests.doubles import host_cuda
api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.distributed as dist
dist.init_process_group("nccl")
DEV = "cuda"
calls = lambda: api.calls
def check_calls(before):
    # the four device sends/receives were one NCCL group (the fake counts a group once)
    assert api.calls == before + 1, (before, api.calls)
"""


@pytest.mark.mpi
def test_batch_isend_irecv_ring_on_cpu_ranks():
    res = run_mpi(RING.replace("SETUP", CPU_SETUP), n=3, timeout=120).check()
    assert res.output.count(": ok") == 3, res.output


@pytest.mark.mpi
def test_batch_isend_irecv_ring_on_host_cuda_is_one_nccl_group():
    res = run_mpi(RING.replace("SETUP", CUDA_SETUP), n=3, timeout=120).check()
    assert res.output.count(": ok") == 3, res.output


SUBGROUP = r"""
import numpy as np
from tests.doubles import host_cuda
cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
import shardflow as sf, shardflow.distributed as dist
dist.init_process_group("nccl")
r = dist.get_rank()
g = dist.new_group([1, 3])
if r in (1, 3):
    peer = 4 - r  # a global rank, as in PyTorch
    mine = sf.tensor(np.full((64, 128), r, dtype=np.float32), device="cuda")
    got = sf.zeros(64, 128, device="cuda")
    before = cuda_api.calls
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer, group=g),
                                     dist.P2POp(dist.irecv, got, peer, group=g)]):
        w.wait()
    assert cuda_api.calls == before + 1
    np.testing.assert_array_equal(got.cpu().numpy(), np.full((64, 128), peer))
dist.barrier()
print(f"rank {r}: ok", flush=True)
"""


@pytest.mark.mpi
def test_batch_isend_irecv_on_a_nccl_subgroup_takes_global_ranks():
    res = run_mpi(SUBGROUP, n=4, timeout=120).check()
    assert res.output.count(": ok") == 4, res.output


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
