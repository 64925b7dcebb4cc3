"""Ops without a derivative sit in the autograd graph as torch has them (``ops/not_differentiable.py``):
their outputs require grad when an input does, carry torch's node (``grad_fn=<NotImplemented>``
for the generic one, ``GeqrfBackward0`` for geqrf), and a backward through them raises torch's
exception type with torch's words. Found by Karpathy's makemore part 3 notebook, which plots
``torch.histogram`` of activations that require grad (and so calls ``.detach()`` on the
results)."""

import re

import numpy as np
import pytest
import torch

import shardflow as sf


def _both(fn, *arrays, grad=(0,)):
    """``fn(lib, *tensors)`` on torch and shardflow; the inputs numbered in ``grad`` require grad."""
    out = []
    for lib in (torch, sf):
        ts = [lib.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
        out.append(fn(lib, *ts))
    return out


def _masked(text: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x", text.replace("torch.", "shardflow."))


A = np.random.default_rng(0).standard_normal(20).astype(np.float32)


@pytest.mark.parametrize("kwargs", [{}, {"bins": 4}, {"bins": 5, "density": True}, {"bins": 3, "range": (-1.0, 1.0)}])
def test_histogram_of_a_tensor_that_requires_grad_as_torch(kwargs):
    th, s = _both(lambda lib, t: lib.histogram(t, **kwargs), A)
    for t_out, s_out in zip(th, s, strict=True):
        assert s_out.requires_grad is t_out.requires_grad is True
        assert s_out.grad_fn.name() == t_out.grad_fn.name() == "torch::autograd::NotImplemented"
        assert _masked(repr(s_out.grad_fn)) == _masked(repr(t_out.grad_fn)) == "<NotImplemented object at 0x>"
        assert repr(s_out) == repr(t_out)  # ..., grad_fn=<NotImplemented>)
        # (the edges are NumPy's float64 linspace cast to float32; torch's is float32: 1 ulp apart)
        np.testing.assert_allclose(s_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6, atol=1e-7)
    # the makemore idiom: slicing and detaching the results
    assert repr(s.bin_edges[:-1].detach()) == repr(th.bin_edges[:-1].detach())
    assert repr(s.hist[:2]) == repr(th.hist[:2])  # grad_fn=<SliceBackward0>


@pytest.mark.parametrize("which", ["input", "bins", "weight"])
def test_histogram_backward_raises_as_torch(which):
    edges = np.array([-3.0, 0.0, 3.0], np.float32)
    weight = np.ones(20, np.float32)
    grad = {"input": (0,), "bins": (1,), "weight": (2,)}[which]
    th, s = _both(lambda lib, t, b, w: lib.histogram(t, bins=b, weight=w), A, edges, weight, grad=grad)
    assert s.hist.requires_grad and s.bin_edges.requires_grad and th.hist.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::histogram is not implemented") as torch_error:
        th.hist.sum().backward()
    with pytest.raises(type(torch_error.value), match="^derivative for aten::histogram is not implemented: .*detach"):
        s.hist.sum().backward()
    np.testing.assert_allclose(s.hist.detach().numpy(), th.hist.detach().numpy())


def test_histogram_without_grad_as_torch():
    th, s = _both(lambda lib, t: lib.histogram(t.detach(), bins=4), A)
    assert not s.hist.requires_grad and not th.hist.requires_grad and s.hist.grad_fn is None
    with torch.no_grad(), sf.no_grad():
        th, s = _both(lambda lib, t: lib.histogram(t, bins=4), A)
    assert not s.hist.requires_grad and not th.hist.requires_grad
    assert repr(s) == repr(th).replace("torch.", "shardflow.")


def test_linalg_ldl_and_geqrf_nodes_and_errors_as_torch():
    m = np.random.default_rng(1).standard_normal((3, 3)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((3, 1)).astype(np.float32)

    def run(lib, a, rhs):
        ld, piv = lib.linalg.ldl_factor(a @ a.mT)
        return ld, piv, lib.linalg.ldl_solve(ld, piv, rhs), lib.geqrf(a)[0]

    th, s = _both(run, m, b, grad=(0, 1))
    for t_out, s_out in zip(th, s, strict=True):
        assert s_out.requires_grad is t_out.requires_grad
        if t_out.grad_fn is not None:
            assert s_out.grad_fn.name() == t_out.grad_fn.name()
            assert _masked(repr(s_out.grad_fn)) == _masked(repr(t_out.grad_fn))
    assert s[3].grad_fn.name() == "GeqrfBackward0"
    for i, pattern in ((0, "derivative for aten::linalg_ldl_factor_ex is not implemented"),
                       (2, "derivative for aten::linalg_ldl_solve is not implemented"),
                       (3, "the derivative for 'geqrf' is not implemented.")):
        with pytest.raises((RuntimeError, NotImplementedError), match=re.escape(pattern)) as torch_error:
            th[i].sum().backward()
        with pytest.raises(type(torch_error.value), match=re.escape(pattern)) as sf_error:
            s[i].sum().backward()
        assert type(sf_error.value) is type(torch_error.value)
        assert "detach its input" in str(sf_error.value)


def test_histogramdd_nodes_and_errors_as_torch():
    pts = np.random.default_rng(3).standard_normal((3, 10, 2)).astype(np.float32)
    edges0 = np.array([-1.0, 0.0, 1.0], np.float32)
    for bins_kind in ("ints", "tensors"):
        def run(lib, a, e0, _kind=bins_kind):
            bins = [3, 2] if _kind == "ints" else [e0, lib.tensor([-1.0, 1.0])]
            return lib.histogramdd(a, bins=bins)

        th, s = _both(run, pts, edges0, grad=(0, 1))
        assert repr(s).replace("shardflow.", "torch.") == repr(th)
        outs = [(s.hist, th.hist)] + list(zip(s.bin_edges, th.bin_edges, strict=True))
        for s_out, t_out in outs:
            assert s_out.requires_grad is t_out.requires_grad
            assert (s_out.grad_fn is None) is (t_out.grad_fn is None)
            if t_out.grad_fn is None:
                continue
            assert s_out.grad_fn.name() == t_out.grad_fn.name()
            with pytest.raises(RuntimeError) as torch_error:
                t_out.sum().backward()
            message = str(torch_error.value)  # derivative for aten::_histogramdd_... is not implemented
            with pytest.raises(RuntimeError, match=re.escape(message)):
                s_out.sum().backward()
        if bins_kind == "tensors":  # the edges returned are the bins given
            assert th.bin_edges[0].requires_grad and s.bin_edges[0].grad_fn is None


def test_accumulate_grad_repr_as_torch():
    """A leaf's AccumulateGrad node is named 'torch::autograd::AccumulateGrad' but prints as
    its type, ``<AccumulateGrad object at ...>`` (the same rule as NotImplemented)."""
    reprs = []
    for lib in (torch, sf):
        x = lib.ones(2, requires_grad=True)
        node = (x * 2).sum().grad_fn.next_functions[0][0].next_functions[0][0]
        assert node.name() == "torch::autograd::AccumulateGrad"
        reprs.append(_masked(repr(node)))
    assert reprs[1] == reprs[0] == "<AccumulateGrad object at 0x>"
