"""``torch.cdist``'s ``compute_mode`` against torch 2.13: Euclidean distances by torch's
matrix-product form when it asks for it (by default past 25 rows: a GEMM, where the pairwise
difference tensor made 512x512x64 take 81 ms against torch's 1.4 ms), the pairwise norm
otherwise; values and gradients as torch's; an unknown mode is torch's ValueError."""

import numpy as np
import pytest
import torch

import shardflow

CASES = [(512, 300, 16, "use_mm_for_euclid_dist_if_necessary", 2.0),
         (3, 4, 5, "use_mm_for_euclid_dist_if_necessary", 2.0),
         (30, 5, 3, "use_mm_for_euclid_dist", 2.0),
         (40, 40, 8, "donot_use_mm_for_euclid_dist", 2.0),
         (40, 30, 8, "use_mm_for_euclid_dist_if_necessary", 1.0),
         (40, 30, 8, "use_mm_for_euclid_dist", 3.0)]


@pytest.mark.parametrize("P, R, M, mode, p", CASES)
def test_cdist_values_and_gradients_match_torch(P, R, M, mode, p):
    g = torch.Generator().manual_seed(P * R + M)
    a = torch.randn(2, P, M, generator=g, requires_grad=True)
    b = torch.randn(2, R, M, generator=g, requires_grad=True)
    sa = shardflow.tensor(a.detach().numpy(), requires_grad=True)
    sb = shardflow.tensor(b.detach().numpy(), requires_grad=True)
    want = torch.cdist(a, b, p=p, compute_mode=mode)
    got = shardflow.cdist(sa, sb, p=p, compute_mode=mode)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    up = torch.randn(want.shape, generator=g)
    want.backward(up)
    got.backward(shardflow.tensor(up.numpy()))
    np.testing.assert_allclose(sa.grad.numpy(), a.grad.numpy(), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(sb.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
@pytest.mark.parametrize("mode", [None, "bogus"])
def test_unknown_compute_mode_is_a_value_error(lib, mode):
    with pytest.raises(ValueError, match=f"{mode} is not a valid value for compute_mode"):
        lib.cdist(lib.ones(2, 3), lib.ones(2, 3), compute_mode=mode)
