"""``i0`` / ``Tensor.i0(_)`` / ``special.i0`` / ``special.i1`` (``ops/bessel.py``) and the
in-place ``Tensor.polygamma_`` / ``mvlgamma_`` against
torch: values across both branches and the overflow / non-finite edges, gradients, dtypes
and the in-place form."""

import numpy as np
import pytest
import torch

import shardflow

X = np.concatenate([np.linspace(-30, 30, 241), [0.0, 1e-3, 19.99, 20.01, 100.0, 700.0, 720.0,
                                                 np.nan, np.inf, -np.inf]])


def test_values_match_torch():
    for dtype in ("float32", "float64"):
        x = X.astype(dtype)
        for sf, th in ((shardflow.i0, torch.i0), (shardflow.special.i0, torch.special.i0),
                       (shardflow.special.i1, torch.special.i1)):
            s, t = sf(shardflow.tensor(x)), th(torch.tensor(x))
            assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-14 if dtype == "float64" else 2e-6,
                                       equal_nan=True, err_msg=f"{th.__name__} {dtype}")


def test_gradients_match_torch():
    x = np.array([-4.0, -0.3, 0.0, 0.7, 5.0, 25.0])
    for sf, th in ((shardflow.i0, torch.i0), (shardflow.special.i1, torch.special.i1)):
        xs, xt = shardflow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        w = np.arange(1.0, 7.0)
        (sf(xs) * shardflow.tensor(w)).sum().backward()
        (th(xt) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-13)


def test_method_in_place_and_integer_input():
    s, t = shardflow.tensor([0.5, -2.0, 3.0]), torch.tensor([0.5, -2.0, 3.0])
    np.testing.assert_allclose(s.i0().numpy(), t.i0().numpy(), rtol=1e-6)
    s.i0_()
    t.i0_()
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6)
    shardflow.i0_(s)  # the top-level in-place form torch also has
    torch.i0_(t)
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-6)
    a, b = shardflow.i0(shardflow.tensor([1, 2])), torch.i0(torch.tensor([1, 2]))
    assert a.dtype == shardflow.float32 and b.dtype == torch.float32
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_polygamma_and_mvlgamma_in_place_match_torch():
    for n in (0, 1, 3):
        s, t = shardflow.tensor([1.5, 2.5, 7.0], dtype=shardflow.float64), torch.tensor([1.5, 2.5, 7.0], dtype=torch.float64)
        # rtol: shardflow's polygamma (n >= 1, ops/special_functions.py) is within ~5e-10 of torch's
        np.testing.assert_allclose(s.polygamma_(n).numpy(), t.polygamma_(n).numpy(), rtol=1e-8)
        np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-8)
    for p in (1, 2, 4):
        s, t = shardflow.tensor([2.5, 4.0], dtype=shardflow.float64), torch.tensor([2.5, 4.0], dtype=torch.float64)
        s.mvlgamma_(p)
        t.mvlgamma_(p)
        np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-12)
    leaf = shardflow.tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        leaf.polygamma_(1)  # in place on a leaf that requires grad, as torch refuses
