"""``Module.register_backward_hook`` (torch's legacy, non-full hook) runs on the autograd node
that made the module's output, as torch's: for a Conv2d ``grad_input`` is (input, weight,
bias) gradients, for a parameter-free one-node module its input's; torch's FutureWarning when
the node does not cover the module; mixing with full hooks is torch's RuntimeError. shardflow
mapped it onto ``register_full_backward_hook`` (a Conv2d's ``grad_input`` had one entry)."""

import numpy as np
import pytest
import torch

import shardflow

LIBS = pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])


def _record(lib, module, x):
    seen = []
    module.register_backward_hook(lambda m, gi, go: seen.append(
        ([None if g is None else g.detach().numpy().copy() for g in gi], [g.detach().numpy().copy() for g in go])))
    with pytest.warns(FutureWarning, match="Using a non-full backward hook when the forward contains multiple "
                                           "autograd Nodes is deprecated"):
        out = module(lib.tensor(x, requires_grad=True))
    (out * out).sum().backward()
    return seen


def test_conv2d_hook_gets_the_nodes_input_gradients_as_torch():
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)
    runs = []
    for lib in (torch, shardflow):
        lib.manual_seed(0)
        runs.append(_record(lib, lib.nn.Conv2d(2, 3, 3), x))
    th, sf = runs
    assert len(sf) == len(th) == 1
    (sf_in, sf_out), (th_in, th_out) = sf[0], th[0]
    assert [a.shape for a in sf_in] == [a.shape for a in th_in] == [(1, 2, 5, 5), (3, 2, 3, 3), (3,)]
    for a, b in zip(sf_in + sf_out, th_in + th_out, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@LIBS
def test_one_node_module_and_replacement(lib):
    x = np.array([-1.0, 2.0, 3.0], np.float32)
    relu = lib.nn.ReLU()
    relu.register_backward_hook(lambda m, gi, go: (gi[0] * 10,))
    t = lib.tensor(x, requires_grad=True)
    with pytest.warns(FutureWarning):  # the leaf's accumulator is not the input's grad_fn: torch warns
        relu(t).sum().backward()
    assert t.grad.tolist() == [0.0, 10.0, 10.0]


@LIBS
def test_mixing_with_full_hooks_is_refused(lib):
    m = lib.nn.Linear(2, 2)
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_full_backward_hook(lambda *a: None)
    m2 = lib.nn.Linear(2, 2)
    m2.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m2.register_backward_hook(lambda *a: None)


@LIBS
def test_removed_hook_does_not_run(lib):
    m = lib.nn.Linear(2, 2)
    calls = []
    handle = m.register_backward_hook(lambda *a: calls.append(1))
    handle.remove()
    m(lib.ones(1, 2, requires_grad=True)).sum().backward()
    assert calls == []
