"""Distributed autograd + DistributedOptimizer against the same computation in one
process (autograd_program.py): the gradients each worker accumulates in the context equal
the local gradients (1e-6), .grad is untouched, one SGD step equals the local step, and
contexts are released on every worker when the block ends."""

import numpy as np
import pytest

import shardflow as torch
import shardflow.optim as optim

from . import autograd_program as prog
from .workers import launch


@pytest.fixture(scope="module")
def run():
    return launch("autograd_program.py", 3, timeout=120)[0].result()


def _reference():
    s1, s2 = prog.Stage(1, 3, 4), prog.Stage(2, 4, 2)
    x = torch.tensor(prog.data(), requires_grad=True)
    y = s2(s1(x))
    y2 = s2(s1(x) * 2)
    loss = y.sum() + (y2 * y2).sum()
    loss.backward()
    grads = [[p.grad.numpy().copy() for p in s.parameters()] for s in (s1, s2)]
    opt = optim.SGD(list(s1.parameters()) + list(s2.parameters()), lr=0.5)
    opt.step()
    return loss.item(), x.grad.numpy(), grads, [[p.numpy() for p in s.parameters()] for s in (s1, s2)]


def test_gradients_cross_rpc_into_the_owners_context(run):
    loss, xg, grads, _ = _reference()
    assert run["loss"] == pytest.approx(loss, rel=1e-6)
    np.testing.assert_allclose(run["x_grad"], xg, rtol=1e-6, atol=1e-6)
    for w, ref in zip(("w1", "w2"), grads):
        for got, want in zip(run[w]["ctx"], ref):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        assert run[w]["dotgrad"] == [True, True]          # accumulated in the context only
    assert run["x_dotgrad_none"] is True


def test_distributed_optimizer_steps_each_owner(run):
    *_, params = _reference()
    for got_stage, ref_stage in zip(run["params_after"], params):
        for got, want in zip(got_stage, ref_stage):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_contexts_are_released_everywhere(run):
    assert run["contexts_inside"] == [1, 1]
    assert run["contexts_after"] == [0, 0, 0]
    assert "Could not find autograd context with id" in run["released_error"]
    assert "Already have an autograd context id for this thread" in run["nested_error"]
