"""``retain_grad()`` on a tensor that does not require grad raises torch's RuntimeError
(shardflow returned silently, so a program relying on the error went on with a ``.grad`` that
stays None); on a leaf that requires grad it is a no-op, on a non-leaf it keeps the grad."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_retain_grad_needs_requires_grad(lib):
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        lib.ones(2).retain_grad()
    with lib.no_grad():
        made_without_grad = lib.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        made_without_grad.retain_grad()


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_retain_grad_leaf_noop_nonleaf_kept(lib):
    w = lib.ones(3, requires_grad=True)
    w.retain_grad()
    z = w * 3
    z.retain_grad()
    (z * z).sum().backward()
    assert w.retains_grad is False and z.retains_grad is True
    assert z.grad.tolist() == [6.0, 6.0, 6.0] and w.grad.tolist() == [18.0, 18.0, 18.0]
