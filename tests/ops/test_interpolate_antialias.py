"""``F.interpolate(..., antialias=True)`` (bilinear, bicubic, lanczos) against PyTorch 2.13:
values and gradients. Image pipelines resize with it (torchvision's ``Resize`` passes
``antialias=True``); it raised NotImplementedError before."""

import numpy as np
import pytest
import torch

import shardflow as sf

CASES = [((8, 8), (3, 3)), ((7, 9), (4, 2)), ((5, 5), (9, 11)), ((6, 6), (6, 6)), ((13, 17), (5, 4))]


@pytest.mark.parametrize("mode,align_corners", [("bilinear", False), ("bilinear", True),
                                                ("bicubic", False), ("bicubic", True), ("lanczos", None)])
@pytest.mark.parametrize("by_scale", [False, True])
def test_antialias_matches_torch_forward_and_backward(mode, align_corners, by_scale):
    r = np.random.default_rng(0)
    for (h, w), (oh, ow) in CASES:
        x = r.standard_normal((2, 3, h, w)).astype(np.float32)
        kw = dict(scale_factor=(oh / h, ow / w)) if by_scale else dict(size=(oh, ow))
        outs = []
        for lib in (torch, sf):
            t = lib.tensor(x, requires_grad=True)
            y = lib.nn.functional.interpolate(t, mode=mode, align_corners=align_corners, antialias=True, **kw)
            g = np.arange(y.numel(), dtype=np.float32).reshape(tuple(y.shape)) % 7 - 3
            y.backward(lib.tensor(g))
            outs.append((y.detach().numpy(), t.grad.numpy()))
        (ty, tg), (sy, sg) = outs
        assert ty.shape == sy.shape
        np.testing.assert_allclose(sy, ty, atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(sg, tg, atol=1e-5, rtol=1e-5)


def test_antialias_float64_and_second_order():
    x = np.random.default_rng(1).standard_normal((1, 1, 9, 6))
    ys = []
    for lib in (torch, sf):
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.interpolate(t, size=(4, 3), mode="bicubic", antialias=True)
        (g,) = lib.autograd.grad((y ** 2).sum(), t, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), t)
        ys.append((y.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(ys[1][0], ys[0][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ys[1][1], ys[0][1], rtol=1e-10, atol=1e-10)


def test_lanczos_needs_antialias_and_antialias_needs_4d():
    x = sf.zeros(1, 1, 4, 4)
    with pytest.raises(ValueError, match="lanczos.*antialias=True"):
        sf.nn.functional.interpolate(x, size=2, mode="lanczos")
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        sf.nn.functional.interpolate(sf.zeros(1, 1, 4), size=2, mode="linear", antialias=True)
