"""``linspace``, ``affine_grid`` and ``grid_sample`` to PyTorch's last bit where it matters:
a grid on pixel centres (the identity ``theta`` of a spatial transformer, the tutorial in
tests/parity/programs/spatial_transformer.py).

There the bilinear gradient w.r.t. the grid is one-sided (``floor`` picks the neighbours),
so a coordinate one ulp below an integer takes the other pair's difference: the gradient
of theta differed by 70% while every value agreed to 1e-7. PyTorch builds the base grid
with its float32 ``linspace`` (a fused multiply-add from the nearer end), ``* (n - 1) / n``
in two roundings, and unnormalises as ``(x + 1) * (W / 2) - 0.5``; shardflow now does the
same, so the grids and the gradients agree exactly / to float32 rounding.
"""

import numpy as np
import pytest
import torch

import shardflow


@pytest.mark.parametrize("start,end", [(-1, 1), (0, 1), (-3.3, 7.1), (5, -2), (1e-3, 2.5)])
def test_linspace_float32_is_torchs_bit_for_bit(start, end):
    for steps in range(0, 130):
        expected = torch.linspace(start, end, steps).numpy()
        got = shardflow.linspace(start, end, steps).numpy()
        assert got.dtype == expected.dtype == np.float32
        np.testing.assert_array_equal(got, expected, err_msg=f"steps={steps}")


def test_linspace_other_dtypes():
    """int64 exact; float64 within an ulp (NumPy's linspace; PyTorch's double fused
    multiply-add is not emulated)."""
    np.testing.assert_array_equal(shardflow.linspace(0, 10, 7, dtype=shardflow.int64).numpy(),
                                  torch.linspace(0, 10, 7, dtype=torch.int64).numpy())
    np.testing.assert_allclose(shardflow.linspace(0, 10, 7, dtype=shardflow.float64).numpy(),
                               torch.linspace(0, 10, 7, dtype=torch.float64).numpy(), rtol=2.3e-16, atol=0)


@pytest.mark.parametrize("size", [(2, 1, 28, 28), (1, 3, 7, 12), (1, 1, 29, 6)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_identity_is_torchs_bit_for_bit(size, align_corners):
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (size[0], 1, 1))
    expected = torch.nn.functional.affine_grid(torch.tensor(theta), size, align_corners=align_corners)
    got = shardflow.nn.functional.affine_grid(shardflow.tensor(theta), size, align_corners=align_corners)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_gradient_on_pixel_centres(padding_mode, align_corners):
    """Identity theta through affine_grid and grid_sample: theta's and the input's gradients
    as torch's (the grid lands on pixel centres, where the gradient is one-sided)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 2, 28, 28)).astype(np.float32)
    w = rng.standard_normal((2, 2, 28, 28)).astype(np.float32)
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], np.float32), (2, 1, 1))
    results = []
    for lib in (torch, shardflow):
        t = lib.tensor(theta, requires_grad=True)
        xi = lib.tensor(x, requires_grad=True)
        grid = lib.nn.functional.affine_grid(t, (2, 2, 28, 28), align_corners=align_corners)
        out = lib.nn.functional.grid_sample(xi, grid, padding_mode=padding_mode, align_corners=align_corners)
        (out * lib.tensor(w)).sum().backward()
        results.append((out.detach().numpy(), t.grad.numpy(), xi.grad.numpy()))
    (th_out, th_gt, th_gx), (sf_out, sf_gt, sf_gx) = results
    np.testing.assert_allclose(sf_out, th_out, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sf_gx, th_gx, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sf_gt, th_gt, rtol=1e-4, atol=1e-3)  # sums of ~1500 terms of size ~10
