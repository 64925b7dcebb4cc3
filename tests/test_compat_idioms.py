"""Idioms of PyTorch programs where shardflow answered differently (found by running the same
snippets on both, session 28): each checked against torch 2.13."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

LIBS = [torch, sf]
IDS = ["torch", "shardflow"]


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_target_size_warning_points_at_the_broadcasting_bug(name):
    """(N, 1) predictions against (N,) targets broadcast to (N, N): torch warns, so must we,
    attributed to the caller's line."""
    got = {}
    for lib in LIBS:
        f = getattr(lib.nn.functional, name)
        x, t = lib.tensor(np.ones((3, 1), np.float32)), lib.tensor(np.zeros(3, np.float32))
        msgs = _warnings(lambda f=f, x=x, t=t: f(x, t))
        got[lib.__name__] = [m.replace(lib.__name__ + ".", "") for m in msgs]
        assert not _warnings(lambda f=f, x=x: f(x, x))  # same shapes: silent
    assert got["shardflow"] == got["torch"] and len(got["torch"]) == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sf.nn.MSELoss()(sf.ones(3, 1), sf.zeros(3))
    assert caught[0].filename == __file__


def test_kl_div_mean_warns_as_torch():
    for lib in LIBS:
        x, t = lib.tensor(np.log(np.full((2, 3), 0.3, np.float32))), lib.tensor(np.full((2, 3), 0.2, np.float32))
        msgs = _warnings(lambda x=x, t=t: lib.nn.functional.kl_div(x, t))
        assert len(msgs) == 1 and msgs[0].startswith("reduction: 'mean' divides the total loss")
        assert not _warnings(lambda x=x, t=t: lib.nn.functional.kl_div(x, t, reduction="batchmean"))


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_soft_margin_loss_refuses_a_broadcasting_target(lib):
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        lib.nn.functional.soft_margin_loss(lib.ones(3, 1), lib.ones(3))


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_float_and_int_of_a_many_element_tensor_are_value_errors(lib):
    for conv in (float, int):
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            conv(lib.ones(2))
    assert float(lib.ones(1, 1)) == 1.0 and int(lib.tensor([[3]])) == 3


@pytest.mark.parametrize("lib", LIBS, ids=IDS)
def test_cuda_without_a_gpu_is_an_assertion_error(lib):
    if lib.cuda.is_available():
        pytest.skip("a CUDA device is visible")
    for call in (lambda: lib.ones(2).cuda(), lambda: lib.ones(2).to("cuda")):
        with pytest.raises(AssertionError):
            call()


def test_data_has_its_own_version_counter_as_torch():
    """``.data`` changes are invisible to autograd (torch's documented hazard): the backward
    uses the changed value; ``detach()`` shares the counter, so its change is refused."""
    grads = {}
    for lib in LIBS:
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        y = x.exp()
        y.data.mul_(2)
        assert y._version == 0
        y.sum().backward()
        grads[lib.__name__] = x.grad.numpy()
        z = lib.tensor([0.5, 1.0], requires_grad=True).exp()
        z.detach().mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
    np.testing.assert_allclose(grads["shardflow"], grads["torch"], rtol=1e-6)
