"""``dist.batch_isend_irecv`` on a NCCL sub-group (ranks 1 and 3 of 4, host CUDA stand-in)
takes global ranks, as in PyTorch, and is one NCCL group."""

import numpy as np

import shardflow as sf
import shardflow.distributed as dist
from tests.doubles import host_cuda


def main(argv):
    cuda_api = host_cuda.install()  # host_cupy as CuPy, NCCL's calls over MPI
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
