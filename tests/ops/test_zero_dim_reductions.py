"""Reductions of a 0-d tensor over dim 0 / -1 against PyTorch (found by tests/ops/fuzz):
torch reduces the one element; shardflow raised NumPy's AxisError (sum, prod, amax, all,
norm, logsumexp, std, mean of float16, ...) or TypeError (softmax). Also: the gradient of
sum / prod / cumsum / cumprod with a ``dtype=`` came back in that dtype from
``autograd.grad`` (torch's is in the input's dtype)."""

import numpy as np
import pytest
import torch

import shardflow as sf

OPS = {
    "sum": lambda L, x, d: L.sum(x, d), "sum_keep": lambda L, x, d: L.sum(x, d, keepdim=True),
    "sum_tuple": lambda L, x, d: L.sum(x, (d,)), "prod": lambda L, x, d: L.prod(x, d),
    "mean": lambda L, x, d: L.mean(x, d), "amax": lambda L, x, d: L.amax(x, d),
    "all": lambda L, x, d: L.all(x, d), "any": lambda L, x, d: L.any(x, d),
    "norm": lambda L, x, d: L.norm(x, dim=d), "norm1": lambda L, x, d: L.norm(x, p=1, dim=d),
    "logsumexp": lambda L, x, d: L.logsumexp(x, d), "var0": lambda L, x, d: L.var(x, d, correction=0),
    "std": lambda L, x, d: L.std(x, d), "nansum": lambda L, x, d: L.nansum(x, d),
    "count_nonzero": lambda L, x, d: L.count_nonzero(x, d), "softmax": lambda L, x, d: L.softmax(x, d),
    "log_softmax": lambda L, x, d: L.log_softmax(x, d), "sum_f64": lambda L, x, d: L.sum(x, d, dtype=L.float64),
}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("d", [0, -1])
@pytest.mark.parametrize("name", list(OPS))
def test_zero_dim_reduction_matches_torch(name, d, dtype):
    t = OPS[name](torch, torch.tensor(1.5, dtype=getattr(torch, dtype)), d)
    s = OPS[name](sf, sf.tensor(1.5, dtype=getattr(sf, dtype)), d)
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] and tuple(s.shape) == tuple(t.shape)
    np.testing.assert_allclose(s.numpy().astype(np.float64), t.numpy().astype(np.float64), rtol=1e-3)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "cumprod"])
def test_reduction_with_dtype_gives_grad_in_input_dtype(op, shape):
    for L in (torch, sf):
        x = L.full(shape, 1.5, requires_grad=True)
        y = getattr(L, op)(x, 0, dtype=L.float64)
        assert y.dtype == L.float64
        (g,) = L.autograd.grad((y * 2).sum(), [x])
        assert g.dtype == L.float32, (L.__name__, g.dtype)
