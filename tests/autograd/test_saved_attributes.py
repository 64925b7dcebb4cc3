"""``grad_fn._saved_self`` / ``_saved_other`` / ``_saved_result`` and what pack hooks receive,
against torch 2.13 (pytorch/tutorials' saved-tensors-hooks tutorial prints them)."""

import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("lib", [torch, sf])
def test_saved_inputs_and_result_like_torch(lib):
    a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = lib.ones(3, requires_grad=True)
    y = a * b
    assert y.grad_fn._saved_self is a and y.grad_fn._saved_other is b
    e = lib.exp(a)
    assert e.grad_fn._saved_result.equal(e) and e.grad_fn._saved_result is not e
    c = a * 2
    d = c.pow(2)
    s = d.grad_fn._saved_self  # a non-leaf input: its values and history
    assert s.equal(c) and s.grad_fn.name() == "MulBackward0"


@pytest.mark.parametrize("lib", [torch, sf])
def test_saved_attributes_after_backward_raise_like_torch(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = a * a
    y.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        _ = y.grad_fn._saved_self


def test_unknown_saved_attribute_is_an_attribute_error():
    y = sf.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(AttributeError, match="_saved_alpha"):
        _ = y.grad_fn._saved_alpha
    assert getattr(sf.exp(sf.tensor([1.0], requires_grad=True)).grad_fn, "_saved_other", None) is None


@pytest.mark.parametrize("lib", [torch, sf])
def test_pack_hook_gets_torchs_tensors_in_torchs_order(lib):
    seen = []

    def pack(t):
        seen.append((str(t), lib.is_grad_enabled()))
        return t * 4  # grad mode is off in a pack hook: this is not packed again

    def unpack(t):
        seen.append(("unpack", str(t)))
        return t / 4

    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True) * 2
    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a * b
    y.sum().backward()
    assert [s.replace("shardflow.", "torch.") for s, _ in seen[:2]] == [
        "tensor([2., 2.], grad_fn=<MulBackward0>)", "tensor([1., 1.], requires_grad=True)"]
    assert [g for _, g in seen[:2]] == [False, False]
    assert [u for u, _ in seen[2:]] == ["unpack", "unpack"]
    assert a.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("lib", [torch, sf])
def test_saved_attribute_unpacks_on_every_read_like_torch(lib):
    calls = []
    x = lib.ones(3, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: calls.append(1) or t):
        y = x.pow(2)
    _ = y.grad_fn._saved_self
    _ = y.grad_fn._saved_self
    assert len(calls) == 2
