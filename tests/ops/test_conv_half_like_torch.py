"""float16 convolutions with PyTorch's bits.

Found running openai/whisper's model on a half mel spectrogram
(``tests/parity/test_public_programs_more_t.py``): NumPy's float16 matmul returns float16,
so ``conv1d/2d/3d`` added the bias to an already rounded sum (two roundings), a float16 ulp
off torch in about a third of the outputs. PyTorch's CPU half convolution accumulates in
float32, adds the bias there and rounds once (its output equals the float64 convolution
rounded to float16, measured below). The input gradient and ``conv_transpose`` (the same
GEMM then ``col2im``) are computed in float32 and rounded once too (session 36): torch's
AVX512 kernels do so (this machine), where an earlier machine's torch rounded the GEMM's
float16 partial sums, as NumPy's float16 GEMM does; shardflow now gives the exactly rounded
gradient (torch's on AVX512: the same but for one element); torch's, which moves with the
machine's ISA, is checked against the float64 gradient at float16's precision.
"""

import numpy as np
import pytest
import torch

import shardflow

CASES = [
    ("conv1d", (2, 8, 20), (16, 8, 3), dict(padding=1, stride=2)),
    ("conv2d", (2, 4, 9, 9), (6, 4, 3, 3), dict(padding=1)),
    ("conv2d", (2, 4, 9, 9), (6, 2, 3, 3), dict(padding=1, groups=2)),
    ("conv3d", (1, 2, 5, 5, 5), (3, 2, 2, 2, 2), dict()),
]


def _differ(sf_t, th_t):
    return int((sf_t.float().detach().numpy() != th_t.float().detach().numpy()).sum())



@pytest.mark.parametrize("op,xshape,wshape,kw", CASES)
def test_half_conv_rounds_once_like_torch(op, xshape, wshape, kw):
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(xshape, generator=g).half(), torch.randn(wshape, generator=g).half()
    b = torch.randn(wshape[0], generator=g).half()
    xs, ws, bs = (shardflow.tensor(t.float().numpy()).half().requires_grad_() for t in (x, w, b))
    x.requires_grad_()
    th = getattr(torch.nn.functional, op)(x, w, b, **kw)
    sf = getattr(shardflow.nn.functional, op)(xs, ws, bs, **kw)
    assert sf.dtype == shardflow.float16
    exact = getattr(torch.nn.functional, op)(x.detach().double(), w.double(), None, **kw)
    # torch rounds the float32 sum once: the exact result rounded, but for a float32 sum
    # that lands across a float16 rounding boundary (0 or 1 element here) ...
    assert _differ(th, (exact + b.double().reshape(-1, *[1] * (len(xshape) - 2))).half()) <= 1
    # ... where the sum rounded before the bias is added (the old code) is off in ~30%
    two = (exact.half().double() + b.double().reshape(-1, *[1] * (len(xshape) - 2))).half()
    assert _differ(th, two) > th.numel() // 10
    assert _differ(sf, th) <= 1
    grad = torch.randn(th.shape, generator=g).half()
    th.backward(grad)
    sf.backward(shardflow.tensor(grad.float().numpy()).half())
    xd = x.detach().double().requires_grad_()
    getattr(torch.nn.functional, op)(xd, w.double(), None, **kw).backward(grad.double())
    assert xs.grad.dtype == shardflow.float16 and _differ(xs.grad, xd.grad.half()) == 0  # rounded once
    # torch's own half kernels differ by ISA (module docstring): its gradient is checked
    # against the float64 one at float16's precision, shardflow's is that one rounded once
    np.testing.assert_allclose(x.grad.float().numpy(), xd.grad.numpy(), rtol=1e-2, atol=1e-2)


def test_half_conv_transpose_like_torch():
    g = torch.Generator().manual_seed(1)
    x, w, b = (torch.randn(s, generator=g).half() for s in ((2, 4, 5, 5), (4, 6, 3, 3), (6,)))
    th = torch.nn.functional.conv_transpose2d(x, w, b, stride=2)
    sf = shardflow.nn.functional.conv_transpose2d(
        *(shardflow.tensor(t.float().numpy()).half() for t in (x, w, b)), stride=2)
    exact = torch.nn.functional.conv_transpose2d(x.double(), w.double(), b.double(), stride=2).half()
    assert sf.dtype == shardflow.float16 and _differ(sf, exact) <= 1
    np.testing.assert_allclose(th.float().numpy(), exact.float().numpy(), rtol=1e-2, atol=1e-2)


def test_half_conv_module_output_like_torch():
    """``nn.Conv1d`` in float16 (Whisper's casting ``Conv1d`` runs this with the weight cast
    to the input's dtype): the same output bits, and float32 stays float32."""
    torch.manual_seed(0)
    shardflow.manual_seed(0)
    th_m, sf_m = torch.nn.Conv1d(8, 16, 3, padding=1), shardflow.nn.Conv1d(8, 16, 3, padding=1)
    x = np.random.default_rng(0).standard_normal((2, 8, 12)).astype(np.float32)
    for dt in ("float16", "float32"):
        th = th_m.to(getattr(torch, dt))(torch.tensor(x).to(getattr(torch, dt)))
        sf = sf_m.to(getattr(shardflow, dt))(shardflow.tensor(x).to(getattr(shardflow, dt)))
        assert str(sf.dtype).split(".")[-1] == dt, dt
        if dt == "float16":
            assert _differ(sf, th) <= 1
        else:  # float32: BLAS's order, a few ulps
            np.testing.assert_allclose(sf.detach().numpy(), th.detach().numpy(), rtol=1e-5, atol=1e-6)
