"""The fused CuPy kernels (shardflow/kernels/cuda.py) are taken only for real CuPy arrays:
never for NumPy arrays nor on the host stand-in (no ElementwiseKernel there), so the stand-in
runs the array-module path that tests/gpu/test_cuda_kernels.py compares the kernels with."""

import numpy as np

import shardflow as sf
from shardflow.kernels import cuda as cuda_kernels


def test_fused_cuda_kernels_are_not_taken_off_the_gpu():
    a = np.ones(4, np.float32)
    assert not cuda_kernels.usable(a)
    d = sf.ones(4, device="cuda").array  # a host stand-in array here
    assert not cuda_kernels.usable(d)
    p = sf.nn.Parameter(sf.ones(3, device="cuda"))
    p.grad = sf.ones(3, device="cuda")
    sf.optim.AdamW([p], lr=0.1).step()  # the array-module path still runs
    np.testing.assert_allclose(p.detach().cpu().numpy(), 1 - 0.1 * 0.01 - 0.1, rtol=1e-6)
