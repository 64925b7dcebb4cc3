"""An in-place op recorded in the graph on a tensor that had none writes into that tensor's
memory, as torch's: ``p.data.copy_(q)`` with ``q`` requiring grad changes the parameter
``p`` (NeuMF's pre-trained init, target-network copies), ``t.detach().mul_(w)`` changes
``t``; the op's gradient still flows to the source; a value saved before the write makes the
backward refuse (torch's version check)."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_data_copy_from_a_tensor_requiring_grad_writes_the_parameter(lib):
    lib.manual_seed(0)
    dst, src = lib.nn.Embedding(3, 2), lib.nn.Embedding(3, 2)
    alias = dst.weight.data
    alias.copy_(0.5 * src.weight)
    assert lib.equal(dst.weight.detach(), 0.5 * src.weight.detach())
    assert alias.requires_grad and alias.grad_fn.name() == "torch::autograd::CopyBackwards"
    assert "grad_fn=<CopyBackwards>" in repr(alias).replace("shardflow", "torch")
    alias.sum().backward()
    assert src.weight.grad.tolist() == [[0.5, 0.5]] * 3
    assert dst.weight.grad is None


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_inplace_on_a_detached_alias_writes_through(lib):
    t = lib.ones(3)
    w = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = t.detach()
    d.mul_(w)
    assert t.tolist() == [1.0, 2.0, 3.0] and d.requires_grad


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_a_saved_value_overwritten_this_way_refuses_backward(lib):
    x = lib.ones(2, requires_grad=True)
    t = lib.ones(2)
    y = (x * t).sum()  # saves t
    t.copy_(x * 3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
