"""``F.kl_div`` / ``nn.KLDivLoss`` where the target is 0: torch computes ``xlogy(t, t) - t * x``,
so a zero target still multiplies the input and an input of ``-inf`` there (``log`` of a
probability of 0, as in The Annotated Transformer's label-smoothing example) or ``nan``
gives ``nan``; a negative target gives ``nan``; the target's gradient is ``nan`` at 0
(torch's xlogy derivative). shardflow masked every zero-target term to 0 and printed finite
losses where torch prints ``nan``."""

import numpy as np
import pytest
import torch

import shardflow

X = np.array([[-np.inf, -1.0, 0.5, np.nan, -2.0], [0.25, -np.inf, -0.5, 1.0, 0.0]], np.float32)
T = np.array([[0.0, 0.5, 0.0, 0.0, -0.25], [0.5, 0.25, 0.0, 0.25, 0.0]], np.float32)


def _run(lib, reduction):
    x = lib.tensor(X, requires_grad=True)
    t = lib.tensor(T, requires_grad=True)
    loss = lib.nn.functional.kl_div(x, t, reduction=reduction)
    loss.sum().backward()
    return loss.detach().numpy(), x.grad.numpy(), t.grad.numpy()


@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean"])
def test_kl_div_zero_target_like_torch(reduction):
    for sf, th in zip(_run(shardflow, reduction), _run(torch, reduction), strict=True):
        np.testing.assert_allclose(sf, th, rtol=1e-6, equal_nan=True)
    assert np.isnan(_run(shardflow, "sum")[0])  # the -inf input under a zero target


def test_kldivloss_finite_where_torch_is_finite():
    # a zero target under a finite input contributes -0 * x = 0: the loss stays finite
    x, t = np.log(np.array([[0.2, 0.3, 0.5]], np.float32)), np.array([[0.0, 0.4, 0.6]], np.float32)
    got = [lib.nn.KLDivLoss(reduction="sum")(lib.tensor(x), lib.tensor(t)).item() for lib in (shardflow, torch)]
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)
    assert np.isfinite(got[0])


def test_kl_div_double_backward_target_nan_at_zero_like_torch():
    out = []
    for lib in (shardflow, torch):
        x = lib.tensor(np.array([[-1.0, 0.5]], np.float32), requires_grad=True)
        t = lib.tensor(np.array([[0.0, 0.5]], np.float32), requires_grad=True)
        (gt,) = lib.autograd.grad(lib.nn.functional.kl_div(x, t, reduction="sum"), t, create_graph=True)
        (gx,) = lib.autograd.grad(gt[0, 1], x)
        out.append((gt.detach().numpy(), gx.numpy()))
    for sf, th in zip(out[0], out[1], strict=True):
        np.testing.assert_allclose(sf, th, rtol=1e-6, equal_nan=True)
