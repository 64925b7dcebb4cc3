"""``hardsigmoid``'s gradient equals torch's in every dtype: torch's kernel multiplies by
float32's 1/6 (``1.0f / 6.0f``) even for float64, so its float64 gradient is
0.1666666716337204 per unit, 3e-8 off 1/6; shardflow used the exact 1/6 and MobileNetV3's
SqueezeExcitation gradients differed by 3e-8 in float64."""

import numpy as np
import pytest
import torch

import shardflow


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hardsigmoid_grad_bits_as_torch(dtype):
    x = np.array([-4.0, -3.0, -1.5, 0.0, 0.5029, 2.9, 3.0, 5.0], dtype=dtype)
    w = np.cos(np.arange(x.size)).astype(dtype)
    grads = []
    for lib in (torch, shardflow):
        t = lib.tensor(x, requires_grad=True)
        (lib.nn.functional.hardsigmoid(t) * lib.tensor(w)).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])
    assert grads[1].dtype == np.dtype(dtype)
