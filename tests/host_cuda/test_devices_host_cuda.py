"""Device placement with CuPy's host stand-in: the default device (``set_default_device`` and
``with shardflow.device(...)``), the ``*_like`` functions, copies, and the error for tensors on
two devices (PyTorch's, except a 0-d CPU tensor, which acts as a number)."""

import numpy as np
import pytest

import shardflow as sf
from shardflow import nn


def test_with_device_makes_factory_tensors_there_and_restores():
    with sf.device("cuda"):
        assert sf.get_default_device() == sf.device("cuda")
        for t in (sf.zeros(2, 3), sf.ones(2), sf.empty(1), sf.full((2,), 1.5), sf.eye(2),
                  sf.arange(4), sf.linspace(0, 1, 5), sf.randn(3), sf.rand(3), sf.randint(5, (3,)),
                  sf.randperm(4), sf.tensor([1.0, 2.0]), sf.as_tensor([1, 2])):
            assert t.device.type == "cuda", t
        with sf.device("cpu"):
            assert sf.zeros(1).device.type == "cpu"
        assert sf.zeros(1).device.type == "cuda"
        assert sf.from_numpy(np.zeros(2)).device.type == "cpu"  # shares NumPy's memory
        assert sf.zeros(1, device="cpu").device.type == "cpu"
    assert sf.get_default_device() == sf.device("cpu")
    assert sf.zeros(2).device.type == "cpu"


def test_set_default_device_builds_modules_on_it():
    sf.set_default_device("cuda")
    try:
        layer = nn.Linear(3, 2)
        assert {p.device.type for p in layer.parameters()} == {"cuda"}
        y = layer(sf.randn(4, 3))
        assert y.device.type == "cuda" and tuple(y.shape) == (4, 2)
    finally:
        sf.set_default_device(None)
    assert sf.zeros(1).device.type == "cpu"


def test_factory_values_on_cuda_equal_the_cpu_ones():
    np.testing.assert_array_equal(sf.arange(0, 1, 0.1, device="cuda").cpu().numpy(),
                                  sf.arange(0, 1, 0.1).numpy())
    np.testing.assert_array_equal(sf.full((2, 2), 7, device="cuda").cpu().numpy(), np.full((2, 2), 7))
    assert sf.full((2,), 7, device="cuda").dtype == sf.int64


def test_like_functions_follow_the_input_device():
    x = sf.randn(2, 3, device="cuda")
    for t in (sf.zeros_like(x), sf.ones_like(x), sf.full_like(x, 2.0), sf.rand_like(x),
              sf.randn_like(x), sf.randint_like(x, 5)):
        assert t.device.type == "cuda" and tuple(t.shape) == (2, 3)


def test_tensor_of_a_cuda_tensor_is_a_copy():
    x = sf.zeros(3, device="cuda")
    y = sf.tensor(x)
    y[0] = 5.0
    assert float(x[0].item()) == 0.0 and y.device.type == "cuda"


def test_tensors_on_two_devices_raise_naming_both_and_the_op():
    a, b = sf.randn(3, device="cuda"), sf.randn(3)
    with pytest.raises(RuntimeError, match=r"same device.*cuda:0 and cpu.*\(in Mul\).*\.to\('cuda:0'\)"):
        a * b
    with pytest.raises(RuntimeError, match="same device"):
        sf.matmul(sf.randn(2, 3), sf.randn(3, 2, device="cuda"))


def test_a_0d_cpu_tensor_acts_as_a_number():
    a = sf.randn(3, device="cuda", requires_grad=True)
    s = sf.tensor(2.0)
    y = a * s
    assert y.device.type == "cuda"
    y.sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), np.full(3, 2.0, np.float32))
    with pytest.raises(RuntimeError, match="same device"):
        a * sf.tensor(2.0, requires_grad=True)
