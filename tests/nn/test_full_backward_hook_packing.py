"""What a full backward hook sees, as torch's ``BackwardHook`` packs it: one ``grad_input`` /
``grad_output`` entry per top-level argument / output, None where that is not a Tensor (an
LSTM's ``(h, c)`` tuple) or not differentiable (an index tensor); a float argument that does
not require grad still gets its gradient once another one does (torch passes every Tensor
through its hook node). shardflow listed only the tensors that required grad (an LSTM's
``grad_output`` had 1 entry, torch's 2; a Bilinear's ``grad_input`` with a constant second
input 1, torch's 2), so ``grad_in[1]`` raised IndexError. A hook returning the wrong number
of gradients raises torch's RuntimeError message."""

import numpy as np
import pytest
import torch

import shardflow


def _shapes(grads):
    return [None if g is None else tuple(g.shape) for g in grads]


def _record(lib, module, *args):
    seen = []
    module.register_full_backward_hook(lambda m, gi, go: seen.append((_shapes(gi), _shapes(go), gi)))
    out = module(*args)
    first = out[0] if isinstance(out, tuple) else out
    first.sum().backward()
    shapes = seen[0][:2]
    values = [None if g is None else g.numpy() for g in seen[0][2]]
    return shapes, values


class TakeRows(torch.nn.Module):
    def forward(self, x, idx, scale):
        return x[idx] * scale


class SfTakeRows(shardflow.nn.Module):
    def forward(self, x, idx, scale):
        return x[idx] * scale


def _cases(lib):
    lib.manual_seed(0)
    take = TakeRows() if lib is torch else SfTakeRows()
    return {
        "lstm (output, (h, c))": (lib.nn.LSTM(2, 3), (lib.randn(4, 1, 2, requires_grad=True),)),
        "bilinear, second input constant": (lib.nn.Bilinear(2, 2, 1),
                                            (lib.randn(3, 2, requires_grad=True), lib.randn(3, 2))),
        "index tensor and a number": (take, (lib.randn(4, 2, requires_grad=True), lib.tensor([2, 0]), 3.0)),
        "max pool with indices": (lib.nn.MaxPool1d(2, return_indices=True), (lib.randn(1, 2, 4, requires_grad=True),)),
    }


@pytest.mark.parametrize("case", list(_cases(torch)))
def test_full_backward_hook_sees_torchs_entries(case):
    t_mod, t_args = _cases(torch)[case]
    s_mod, s_args = _cases(shardflow)[case]
    (t_shapes, t_values), (s_shapes, s_values) = _record(torch, t_mod, *t_args), _record(shardflow, s_mod, *s_args)
    assert s_shapes == t_shapes
    for s, t in zip(s_values, t_values, strict=True):
        if t is not None:
            np.testing.assert_allclose(s, t, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("pre", [False, True])
def test_wrong_number_of_gradients_raises_like_torch(pre):
    messages = []
    for lib in (torch, shardflow):
        lin = lib.nn.Linear(2, 2)
        if pre:
            lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
        else:
            lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError) as err:
            lin(lib.randn(1, 2, requires_grad=True)).sum().backward()
        messages.append(str(err.value))
    assert messages[1] == messages[0]


def test_no_input_requires_grad_hook_must_return_none_like_torch():
    messages = []
    for lib in (torch, shardflow):
        lin = lib.nn.Linear(2, 2)
        lin.register_full_backward_hook(lambda m, gi, go: (lib.ones(1, 2),))
        with pytest.warns(UserWarning, match="no inputs require gradients"), pytest.raises(RuntimeError) as err:
            lin(lib.randn(1, 2)).sum().backward()
        messages.append(str(err.value))
    assert messages[1] == messages[0]


def test_unused_input_gets_zero_gradient_like_torch():
    """An input the forward ignores: torch's hook node materialises its gradient, so the hook
    sees zeros and the input's ``.grad`` is zeros, not None."""
    results = []
    for lib, base in ((torch, torch.nn.Module), (shardflow, shardflow.nn.Module)):
        class FirstOnly(base):
            def forward(self, x, y):
                return x * 2

        m = FirstOnly()
        seen = []
        m.register_full_backward_hook(lambda mod, gi, go: seen.append([g.tolist() for g in gi]))
        x, y = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        m(x, y).sum().backward()
        results.append((seen, x.grad.tolist(), y.grad.tolist()))
    assert results[1] == results[0] == ([[[2.0, 2.0], [0.0, 0.0]]], [2.0, 2.0], [0.0, 0.0])
