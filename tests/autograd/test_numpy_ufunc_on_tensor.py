"""A NumPy ufunc applied to a tensor gives a tensor, as in PyTorch (``Tensor.__array_wrap__``):
``np.exp(loss)`` prints ``tensor(12.1825)``, not ``12.182493``. Found in yunjey's
pytorch-tutorial idioms (perplexity as ``np.exp`` of a loss)."""

import warnings

import numpy as np
import pytest
import torch

import shardflow


def _both(f):
    th, sf = f(torch), f(shardflow)
    assert type(sf).__name__ == type(th).__name__ == "Tensor"
    assert str(sf.dtype).split(".")[-1] == str(th.dtype).split(".")[-1]
    assert list(sf.shape) == list(th.shape)
    np.testing.assert_allclose(sf.numpy(), th.numpy(), rtol=1e-6)
    return th, sf


@pytest.mark.parametrize("make", [
    lambda lib: np.exp(lib.tensor(2.5)),
    lambda lib: np.exp(lib.tensor([1.0, 2.0])),
    lambda lib: np.sqrt(lib.tensor([[4.0, 9.0]], dtype=lib.float64)),
    lambda lib: np.exp(lib.tensor([1, 2])),  # int -> float64, NumPy's promotion in both
    lambda lib: np.maximum(lib.tensor([1.0, 2.0]), 1.5),
    lambda lib: np.isnan(lib.tensor([1.0, float("nan")])),  # bool -> uint8, as torch
])
def test_ufunc_of_a_tensor_is_a_tensor_like_torch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch's own __array_wrap__ signature
        th, sf = _both(make)
    assert str(sf).replace("shardflow.", "torch.") == str(th)


def test_ufunc_result_prints_like_torch_in_format():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        th, sf = np.exp(torch.tensor(2.5)), np.exp(shardflow.tensor(2.5))
    assert f"{sf:5.2f} {sf}" == f"{th:5.2f} {th}" == "12.18 12.182493209838867"


def test_no_numpy_deprecation_warning_from_our_wrap():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        out = np.exp(shardflow.tensor([0.0]))
    assert out.tolist() == [1.0]
