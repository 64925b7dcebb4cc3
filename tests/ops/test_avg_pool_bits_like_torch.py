"""``avg_pool{1,2,3}d`` with PyTorch's bits, and ``adaptive_avg_pool2d`` in float16.

Found running openai/CLIP's ModifiedResNet in float16 (``convert_weights``;
``tests/parity/test_public_programs_more_t.py``): its anti-aliasing ``nn.AvgPool2d`` summed
each window in float16 (a rounding per addition) and multiplied by ``1/divisor``. PyTorch's
CPU kernel sums the window in order (float16/bfloat16 in float32) and divides by the divisor,
one rounding at the end; its backward adds ``grad / divisor`` to each window in output order.
shardflow now does the same: every output and input gradient below is torch's, bit for bit,
in float64, float32, float16 and bfloat16 (float32 was an ulp off in up to a quarter of the
outputs with a 3x3 window; float16 in a third).
"""

import numpy as np
import pytest
import torch

import shardflow

CASES = [
    (2, (2, 3, 9, 9), 2, {}),
    (2, (2, 3, 9, 9), 3, {}),
    (2, (2, 3, 9, 9), 3, dict(stride=2, padding=1)),
    (2, (2, 3, 9, 9), 3, dict(stride=1, padding=1, count_include_pad=False)),
    (2, (2, 3, 9, 9), 3, dict(stride=2, ceil_mode=True)),
    (2, (2, 3, 9, 9), 2, dict(divisor_override=3)),
    (1, (2, 3, 11), 3, dict(stride=2, padding=1)),
    (3, (1, 2, 5, 5, 5), 3, dict(stride=1, padding=1)),
]


def _bits(t):
    return t.detach().float().numpy()


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("d,shape,k,kw", CASES)
def test_avg_pool_bits_like_torch(dtype, d, shape, k, kw):
    if d == 3 and dtype in ("float16", "bfloat16"):
        pytest.skip("torch has no CPU avg_pool3d for 2-byte floats (shardflow does)")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g).to(getattr(torch, dtype)).requires_grad_()
    xs = shardflow.tensor(x.detach().float().numpy()).to(getattr(shardflow, dtype)).requires_grad_()
    op = f"avg_pool{d}d"
    th = getattr(torch.nn.functional, op)(x, k, **kw)
    sf = getattr(shardflow.nn.functional, op)(xs, k, **kw)
    assert str(sf.dtype).split(".")[-1] == dtype
    np.testing.assert_array_equal(_bits(sf), _bits(th))
    grad = torch.randn(th.shape, generator=g).to(th.dtype)
    (gx,) = torch.autograd.grad(th, x, grad)
    (gxs,) = shardflow.autograd.grad(sf, xs, shardflow.tensor(grad.float().numpy()).to(sf.dtype))
    assert str(gxs.dtype).split(".")[-1] == dtype
    np.testing.assert_array_equal(_bits(gxs), _bits(gx))


def test_avg_pool_module_in_half_like_clip():
    """CLIP's ``nn.AvgPool2d(2)`` after a float16 convolution: torch's bits."""
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(2, 8, 8, 8, generator=g) * 3).half()
    th = torch.nn.AvgPool2d(2)(x)
    sf = shardflow.nn.AvgPool2d(2)(shardflow.tensor(x.float().numpy()).half())
    np.testing.assert_array_equal(_bits(sf), _bits(th))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_adaptive_avg_pool_half_rounds_once(dtype):
    """``adaptive_avg_pool2d`` on float16 ran its bin GEMMs in float16 (a rounding after each
    dimension: 42 of 72 outputs off torch's); now in float32 with one rounding, as bfloat16
    did: at most 1 of 72 off (a ``1/len`` weight's product where torch divides; measured
    0 and 1). Gradients keep the input's dtype."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4, 9, 9, generator=g).to(getattr(torch, dtype)).requires_grad_()
    xs = shardflow.tensor(x.detach().float().numpy()).to(getattr(shardflow, dtype)).requires_grad_()
    th = torch.nn.functional.adaptive_avg_pool2d(x, 3)
    sf = shardflow.nn.functional.adaptive_avg_pool2d(xs, 3)
    assert int((_bits(sf) != _bits(th)).sum()) <= 1
    (gxs,) = shardflow.autograd.grad(sf.sum(), xs)
    (gx,) = torch.autograd.grad(th.sum(), x)
    assert str(gxs.dtype).split(".")[-1] == dtype
    np.testing.assert_allclose(_bits(gxs), _bits(gx), rtol=1e-2)
