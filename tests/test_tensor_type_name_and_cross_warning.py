"""Two things the introduction tutorials print or warn, as torch: ``print(type(x))`` of a
tensor reads ``<class 'shardflow.Tensor'>`` (torch: ``<class 'torch.Tensor'>``; shardflow
printed its defining module, ``shardflow.autograd.tensor.Tensor``), and ``torch.cross``
without ``dim`` warns that the default is deprecated (torch's UserWarning; shardflow was
silent). Tensors still pickle and unpickle (by the module-level rebuild function)."""

import pickle
import warnings

import numpy as np
import pytest
import torch

import shardflow
from shardflow.backend import user_warning


def test_tensor_class_prints_under_the_package_name_like_torch():
    assert str(type(torch.ones(1))) == "<class 'torch.Tensor'>"
    assert str(type(shardflow.ones(1))) == "<class 'shardflow.Tensor'>"
    assert shardflow.Tensor.__module__ == "shardflow" and shardflow.Tensor.__qualname__ == "Tensor"
    assert str(shardflow.nn.Parameter) == "<class 'shardflow.nn.parameter.Parameter'>"


def test_tensors_and_the_class_still_pickle():
    x = shardflow.tensor([1.5, 2.5], requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert type(y) is shardflow.Tensor and y.requires_grad
    np.testing.assert_array_equal(y.detach().numpy(), [1.5, 2.5])
    assert pickle.loads(pickle.dumps(shardflow.Tensor)) is shardflow.Tensor


def test_cross_without_dim_warns_like_torch():
    # torch warns once per process (TORCH_WARN_ONCE), so another test may have used its
    # warning up: shardflow's once-only flag is reset here, torch's cannot be

    user_warning._given.discard("cross_without_dim")
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        out = shardflow.cross(shardflow.tensor([0.0, 1.0, 0.0]), shardflow.tensor([1.0, 0.0, 0.0]))
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        shardflow.cross(shardflow.tensor([0.0, 1.0, 0.0]), shardflow.tensor([1.0, 0.0, 0.0]))
    assert out.tolist() == [0.0, 0.0, -1.0] and not again  # once, as torch's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.cross(torch.tensor([0.0, 1.0, 0.0]), torch.tensor([1.0, 0.0, 0.0])).tolist() == out.tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shardflow.cross(shardflow.tensor([0.0, 1.0, 0.0]), shardflow.tensor([1.0, 0.0, 0.0]), dim=0)
