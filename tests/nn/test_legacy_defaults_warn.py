"""PyTorch's warnings for legacy call forms that the public tutorials still use (the
spatial transformer tutorial: ``nll_loss(..., size_average=False)`` and ``affine_grid`` /
``grid_sample`` without ``align_corners``): same warning, same result as torch."""

import warnings

import numpy as np
import pytest
import torch

import shardflow


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("kwargs", [dict(size_average=False), dict(reduce=False), dict(size_average=True, reduce=True)])
@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_legacy_reduction_arguments_warn_and_reduce_as_torch(loss, kwargs):
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    target = np.array([0, 1, 2, 4])
    results = []
    for lib in (torch, shardflow):
        fn = getattr(lib.nn.functional, loss)
        results.append(_warnings(lambda: fn(lib.nn.functional.log_softmax(lib.tensor(x), 1), lib.tensor(target),
                                            **kwargs).numpy()))
    (th_out, th_msgs), (sf_out, sf_msgs) = results
    np.testing.assert_allclose(sf_out, th_out, rtol=1e-6)
    assert sf_msgs == th_msgs and len(th_msgs) == 1


def test_loss_module_legacy_arguments_warn_as_torch():
    _, th_msgs = _warnings(lambda: torch.nn.NLLLoss(size_average=False))
    sf_module, sf_msgs = _warnings(lambda: shardflow.nn.NLLLoss(size_average=False))
    assert sf_msgs == th_msgs and len(th_msgs) == 1
    assert sf_module.reduction == "sum"
    assert _warnings(lambda: shardflow.nn.NLLLoss(reduction="sum"))[1] == []


@pytest.mark.parametrize("align_corners", [None, False, True])
def test_grid_functions_warn_when_align_corners_is_left_unset(align_corners):
    theta = np.array([[[0.9, 0.1, 0.05], [-0.1, 1.1, 0.0]]], np.float32)
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6)).astype(np.float32)
    results = []
    for lib in (torch, shardflow):
        F = lib.nn.functional
        grid, grid_msgs = _warnings(lambda: F.affine_grid(lib.tensor(theta), (1, 2, 5, 6), align_corners=align_corners))
        out, sample_msgs = _warnings(lambda: F.grid_sample(lib.tensor(x), grid, align_corners=align_corners))
        results.append((out.numpy(), grid_msgs, sample_msgs))
    (th_out, *th_msgs), (sf_out, *sf_msgs) = results
    np.testing.assert_allclose(sf_out, th_out, rtol=1e-5, atol=1e-6)
    assert sf_msgs == th_msgs
    assert (th_msgs[0] != []) == (align_corners is None)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 4)])
def test_implicit_softmax_dim_warns_with_the_functions_name(name, shape):
    """The spatial transformer tutorial's stored form calls ``F.log_softmax(x)``."""
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    th_out, th_msgs = _warnings(lambda: getattr(torch.nn.functional, name)(torch.tensor(x)).numpy())
    sf_out, sf_msgs = _warnings(lambda: getattr(shardflow.nn.functional, name)(shardflow.tensor(x)).numpy())
    np.testing.assert_allclose(sf_out, th_out, rtol=1e-6, atol=1e-7)
    assert sf_msgs == th_msgs and len(th_msgs) == 1


def test_variable_volatile_warns_as_torch():
    x = np.ones(3, np.float32)
    _, th_msgs = _warnings(lambda: torch.autograd.Variable(torch.tensor(x), volatile=True))
    _, sf_msgs = _warnings(lambda: shardflow.autograd.Variable(shardflow.tensor(x), volatile=True))
    assert sf_msgs == th_msgs and len(th_msgs) == 1
