"""The engine benchmark's shardflow side on ``device="cuda"`` with CuPy's host stand-in: each
CPU workload's model, batch, loss and optimizer step (``bench.engine._step_fn``, what
``shardflow bench engine --device cuda`` times) run on cuda and give the CPU's loss and
weights. The PyTorch CUDA side and the timings need a GPU (tests/gpu/test_bench_cuda.py)."""

import numpy as np
import pytest

import shardflow as sf
from shardflow.bench.engine import _step_fn
from shardflow.bench.workloads import WORKLOADS


@pytest.mark.parametrize("key", ["mlp", "cnn", "gpt"])
def test_bench_step_on_cuda_equals_cpu(key):
    wl = WORKLOADS[key]
    x, y = wl.make_batch(np.random.default_rng(0))
    runs = {}
    for dev in ("cpu", "cuda"):
        sf.manual_seed(0)
        model = wl.build(sf).to(dev)
        step = _step_fn(sf, wl, model, wl.make_optimizer(sf, model),
                        sf.from_numpy(x).to(dev), sf.from_numpy(y).to(dev))
        losses = [float(step().item()) for _ in range(2)]
        if dev == "cuda":
            sf.cuda.synchronize()  # what the benchmark calls around its timed runs
        runs[dev] = losses, [p.detach().cpu().numpy() for p in model.parameters()]
    (cl, cp), (gl, gp) = runs["cpu"], runs["cuda"]
    np.testing.assert_allclose(gl, cl, rtol=1e-4)
    for c, g in zip(cp, gp):  # AdamW makes noise-level gradient differences (Numba kernels on
        np.testing.assert_allclose(g, c, rtol=1e-3, atol=1e-4)  # the CPU) into lr-sized steps
