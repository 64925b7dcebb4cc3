"""``copy.deepcopy`` of tensors and of a module under the old ``nn.utils.weight_norm``,
against PyTorch: a non-leaf refuses (torch's RuntimeError and message), a leaf's copy keeps
``requires_grad``, a copy of ``.grad`` and its own attributes. And ``weight_norm`` on a name
the module lacks raises torch's AttributeError."""

import copy
import warnings

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_deepcopy_refuses_a_non_leaf(lib):
    a = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"graph leaves\) support the deepcopy protocol.*weight_norm"):
        copy.deepcopy(a * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # weight_norm's deprecation
        conv = lib.nn.utils.weight_norm(lib.nn.Conv1d(2, 3, 3, dilation=2))
    with pytest.raises(RuntimeError, match="weight_norm"):
        copy.deepcopy(conv)  # its computed ``weight`` is not a leaf
    param = lib.nn.utils.parametrizations.weight_norm(lib.nn.Conv1d(2, 3, 3))
    assert copy.deepcopy(param).parametrizations.weight.original1.shape == (3, 2, 3)


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_deepcopy_of_a_leaf_keeps_grad_and_attributes(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    (a * a).sum().backward()
    a.tag = {"name": "a"}
    memo = {}
    b = copy.deepcopy(a, memo)
    assert b.requires_grad and b.is_leaf and b is not a
    assert b.grad.tolist() == [2.0, 4.0] and b.grad is not a.grad
    assert b.tag == {"name": "a"} and b.tag is not a.tag
    assert copy.deepcopy(a, memo) is b  # the memo is honoured
    h = lib.ones(3, dtype=lib.float16)
    assert copy.deepcopy(h).dtype == lib.float16 and not copy.deepcopy(h).requires_grad


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_weight_norm_of_a_missing_name_raises_attribute_error(lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
            lib.nn.utils.weight_norm(lib.nn.Linear(2, 2), name="nope")
