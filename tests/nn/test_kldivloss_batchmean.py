"""``nn.KLDivLoss(reduction="batchmean")`` (the reduction torch's docs recommend for KL
divergence, used by knowledge-distillation programs) raised ValueError at construction:
the loss modules' reduction check knew only 'none'/'mean'/'sum'. It is accepted for
KLDivLoss now and gives torch's value and gradient; other losses still refuse it."""

import numpy as np
import pytest
import torch

import shardflow


@pytest.mark.parametrize("log_target", [False, True])
def test_kldivloss_batchmean_like_torch(log_target):
    rng = np.random.default_rng(0)
    logits, target = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    results = []
    for lib in (shardflow, torch):
        x = lib.tensor(logits, requires_grad=True)
        t = lib.tensor(target)
        t = lib.log_softmax(t, 1) if log_target else lib.softmax(t, 1)
        criterion = lib.nn.KLDivLoss(reduction="batchmean", log_target=log_target)
        loss = criterion(lib.log_softmax(x, 1), t)
        loss.backward()
        results.append((loss.item(), x.grad.numpy().copy(), repr(criterion)))
    (sf_loss, sf_grad, sf_repr), (th_loss, th_grad, th_repr) = results
    np.testing.assert_allclose(sf_loss, th_loss, rtol=1e-6)
    np.testing.assert_allclose(sf_grad, th_grad, rtol=1e-5, atol=1e-7)
    assert sf_repr == th_repr == "KLDivLoss()"


def test_other_losses_refuse_batchmean():
    with pytest.raises(ValueError, match="batchmean is not a valid value for reduction"):
        shardflow.nn.MSELoss(reduction="batchmean")
