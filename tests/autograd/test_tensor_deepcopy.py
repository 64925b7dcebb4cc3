"""``copy.deepcopy`` of tensors and parameters against torch 2.13 (``autograd/tensor_deepcopy.py``).

Found by sfujim/TD3's ``load`` (``critic_target = copy.deepcopy(self.critic)`` after
training): a deep-copied Parameter kept its ``.grad`` (torch's copy has none), a plain leaf
tensor lost its ``.grad`` and attributes (torch keeps both), and a non-leaf was copied where
torch raises."""

import copy

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_leaf_copy_keeps_grad_attributes_and_own_memory(lib):
    t = lib.tensor([1.0, 2.0], requires_grad=True)
    t.note = {"k": [1]}
    (t * t).sum().backward()
    c = copy.deepcopy(t)
    assert c is not t and c.is_leaf and c.requires_grad and c.dtype == lib.float32
    assert c.grad is not None and c.grad is not t.grad
    assert c.grad.tolist() == [2.0, 4.0]
    assert c.note == {"k": [1]} and c.note is not t.note
    with lib.no_grad():
        c.add_(1.0)
    assert t.tolist() == [1.0, 2.0]  # its own memory
    d = copy.deepcopy({"a": t, "b": t})
    assert d["a"] is d["b"]  # one copy per tensor (memo)


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_view_and_int_tensors_copy_to_their_own_memory(lib):
    base = lib.arange(6)
    v = base[2:4]
    c = copy.deepcopy(v)
    assert c.tolist() == [2, 3] and c.dtype == lib.int64
    c[0] = 9
    assert base.tolist() == [0, 1, 2, 3, 4, 5]
    assert c._base is None


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_parameter_copy_has_no_grad(lib):
    m = lib.nn.Linear(2, 1)
    m(lib.ones(1, 2)).sum().backward()
    c = copy.deepcopy(m)
    assert type(c.weight).__name__ == "Parameter" and c.weight.requires_grad
    assert c.weight.grad is None and c.bias.grad is None
    assert m.weight.grad is not None
    assert lib.equal(c.weight, m.weight)


def test_non_leaf_refused_like_torch():
    errors = []
    for lib in (torch, shardflow):
        y = lib.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError) as e:
            copy.deepcopy(y)
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    assert "graph leaves" in errors[1]


def test_detached_result_copies():
    y = (shardflow.ones(2, requires_grad=True) * 2).detach()
    assert copy.deepcopy(y).tolist() == [2.0, 2.0]
