"""The gradient of a broadcast operand in float16/bfloat16 is summed as torch's
``sum_to_size``: in float32, rounded once. modded-nanogpt scales bfloat16 activations by 0-d
float32 parameters (``self.lambdas[0] * x``, ``self.skip_weights[i] * skip``); shardflow
summed the bfloat16 products in bfloat16 (and in two passes), and a gradient torch gave as
0.00185 came out 0.0 (tests/parity/test_public_programs_more_aj.py)."""

import numpy as np
import pytest
import torch

import shardflow


def _grads(lib, x, g, shape, dtype):
    # a 0-d float32 scale keeps the product in the 2-byte dtype; a dimensioned one is that dtype
    w = lib.full(shape, 0.7, dtype=lib.float32 if not shape else getattr(lib, dtype), requires_grad=True)
    xs = lib.tensor(x).to(getattr(lib, dtype))
    y = w * xs if len(shape) else w[()] * xs
    y.backward(lib.tensor(g).to(getattr(lib, dtype)))
    return y, w.grad


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(), (1, 1, 32), (1, 32, 1), (32,)])
def test_half_broadcast_gradient_sums_in_float32_like_torch(shape, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 32, 32)).astype(np.float32)
    g = rng.standard_normal((4, 32, 32)).astype(np.float32)
    ty, tg = _grads(torch, x, g, shape, dtype)
    sy, sg = _grads(shardflow, x, g, shape, dtype)
    assert str(sy.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1]
    assert str(sg.dtype).split(".")[-1] == str(tg.dtype).split(".")[-1]
    np.testing.assert_array_equal(sg.float().numpy(), tg.float().numpy())


def test_half_bias_like_broadcast_add_gradient_like_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 48)).astype(np.float32)
    out = []
    for lib in (torch, shardflow):
        b = lib.zeros(48, dtype=lib.bfloat16, requires_grad=True)
        (lib.tensor(x).bfloat16() + b).pow(2).sum().backward()
        out.append(b.grad.float().numpy())
    np.testing.assert_array_equal(out[1], out[0])
