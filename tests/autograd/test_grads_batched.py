"""``autograd.grad(..., is_grads_batched=True)``: one vector-Jacobian product per leading entry
of the seeds (a Jacobian from the identity), first order and differentiable again; against torch."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _jacobian_rows(t, create_graph):
    x = t.tensor(np.arange(6.).reshape(2, 3) / 5, requires_grad=True)
    y = (x.sin() * x).sum(0)  # (3,)
    (jac,) = t.autograd.grad(y, x, t.eye(3, dtype=t.float64), is_grads_batched=True,
                             create_graph=create_graph)  # (3, 2, 3)
    if create_graph:
        (jac * t.arange(18., dtype=t.float64).reshape(3, 2, 3)).sum().backward()
    return jac.detach().numpy(), None if x.grad is None else x.grad.numpy()


@pytest.mark.parametrize("create_graph", [False, True])
def test_batched_seeds_give_torchs_jacobian(create_graph):
    got_jac, got_grad = _jacobian_rows(sf, create_graph)
    want_jac, want_grad = _jacobian_rows(torch, create_graph)
    np.testing.assert_allclose(got_jac, want_jac, rtol=1e-12, atol=1e-12)
    if create_graph:
        np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12, atol=1e-12)


def test_unused_input_and_bad_seeds():
    x = sf.ones(3, requires_grad=True)
    z = sf.ones(2, requires_grad=True)
    y = x * 2
    jac, none = sf.autograd.grad(y, (x, z), sf.eye(3), is_grads_batched=True, allow_unused=True,
                                 retain_graph=True)
    np.testing.assert_array_equal(jac.numpy(), 2 * np.eye(3))
    assert none is None
    with pytest.raises(RuntimeError, match="leading batch dimension"):
        sf.autograd.grad(y, x, None, is_grads_batched=True, retain_graph=True)
