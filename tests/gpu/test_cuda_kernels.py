"""The fused CuPy kernels (shardflow/kernels/cuda.py) on a GPU against the CPU: Adam/AdamW
(every option) over a few steps, GELU and LayerNorm forward and backward, float32 and float64. Each
test first checks that the fused path is the one taken, so it cannot pass on the unfused one."""

import numpy as np
import pytest

import shardflow as sf
from shardflow.kernels import cuda as cuda_kernels


@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("opt,kwargs", [
    ("Adam", {}), ("Adam", {"weight_decay": 0.1, "maximize": True}), ("Adam", {"amsgrad": True}),
    ("AdamW", {}), ("AdamW", {"weight_decay": 0.05, "amsgrad": True}),
])
def test_adam_fused_on_cuda_matches_cpu(dtype, rtol, opt, kwargs, monkeypatch):
    monkeypatch.delenv("SHARDFLOW_KERNELS", raising=False)
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(33, 17)).astype(dtype)
    grads = [rng.normal(size=w0.shape).astype(dtype) for _ in range(3)]
    results = []
    for device in ("cpu", "cuda"):
        p = sf.nn.Parameter(sf.tensor(w0, device=device))
        o = getattr(sf.optim, opt)([p], lr=1e-2, **kwargs)
        for g in grads:
            p.grad = sf.tensor(g, device=device)
            o.step()
        if device == "cuda":
            st = o.state[p]
            assert cuda_kernels.usable(p.array, p.grad.array, st["exp_avg"].array, st["exp_avg_sq"].array)
        results.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_fused_on_cuda_matches_cpu(dtype, rtol, approximate, monkeypatch):
    monkeypatch.delenv("SHARDFLOW_KERNELS", raising=False)
    rng = np.random.default_rng(1)
    x0 = (rng.normal(size=(4, 257)) * 3).astype(dtype)
    g0 = rng.normal(size=x0.shape).astype(dtype)
    out = []
    for device in ("cpu", "cuda"):
        x = sf.tensor(x0, device=device, requires_grad=True)
        y = sf.nn.functional.gelu(x, approximate=approximate)
        y.backward(sf.tensor(g0, device=device))
        out.append((y.detach().cpu().numpy(), x.grad.cpu().numpy()))
    assert cuda_kernels.usable(sf.tensor(x0, device="cuda").array)
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=rtol, atol=rtol)
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-5), ("float64", 1e-11)])
@pytest.mark.parametrize("shape,affine", [((4, 7, 768), "wb"), ((33, 5), "w"), ((6, 300), ""), ((1, 1), "wb")])
def test_layer_norm_fused_on_cuda_matches_cpu(dtype, rtol, shape, affine, monkeypatch):
    monkeypatch.delenv("SHARDFLOW_KERNELS", raising=False)
    rng = np.random.default_rng(2)
    D = shape[-1]
    x0 = (rng.normal(size=shape) * 2 + 0.5).astype(dtype)
    g0 = rng.normal(size=shape).astype(dtype)
    w0 = rng.normal(size=D).astype(dtype)
    b0 = rng.normal(size=D).astype(dtype)
    out = []
    for device in ("cpu", "cuda"):
        x = sf.tensor(x0, device=device, requires_grad=True)
        w = sf.tensor(w0, device=device, requires_grad=True) if "w" in affine else None
        b = sf.tensor(b0, device=device, requires_grad=True) if "b" in affine else None
        y = sf.nn.functional.layer_norm(x, (D,), w, b)
        if device == "cuda":
            assert y.grad_fn.fused == "cuda"
        y.backward(sf.tensor(g0, device=device))
        out.append([y.detach().cpu().numpy(), x.grad.cpu().numpy()]
                   + [t.grad.cpu().numpy() for t in (w, b) if t is not None])
    for got, want in zip(out[1], out[0]):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 10)
