"""``Tensor.scatter_reduce_`` under autograd, against torch. Every backward through it failed
with "one of the tensors needed for gradient computation has been modified by an inplace
operation: input 0 saved by ScatterReduceBackward0" (the op version-checked its own input,
which it had just written; it keeps a copy for backward). Found by PyTorch Geometric's
``scatter(..., reduce='max')`` = ``src.new_zeros(size).scatter_reduce_(..., include_self=False)``
(``tests/parity/test_public_programs_more_ai.py``)."""

import numpy as np
import pytest
import torch

import shardflow


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [False, True])
def test_scatter_reduce_inplace_gradients_like_torch(reduce, include_self):
    g = np.random.default_rng(0)
    base_np = g.standard_normal((3, 4)).astype(np.float32)
    src_np = g.standard_normal((5, 4)).astype(np.float32)
    src_np[1] = src_np[3]  # ties for amax/amin
    idx_np = np.array([[0, 2, 0, 1], [2, 2, 0, 1], [0, 0, 1, 1], [2, 2, 0, 1], [1, 0, 2, 2]])
    w_np = g.standard_normal((3, 4)).astype(np.float32)
    results = []
    for lib in (torch, shardflow):
        base = lib.tensor(base_np, requires_grad=True)
        src = lib.tensor(src_np, requires_grad=True)
        x = base * 1  # a non-leaf written in place
        out = x.scatter_reduce_(0, lib.tensor(idx_np), src, reduce=reduce, include_self=include_self)
        assert out is x and out.grad_fn.name() == "ScatterReduceBackward0"
        (out * lib.tensor(w_np)).sum().backward()
        results.append([out.detach().numpy(), base.grad.numpy(), src.grad.numpy()])
    for t, s in zip(*results, strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-6)


def test_scatter_reduce_inplace_into_new_zeros_like_pyg():
    """PyG's ``scatter(src, index, reduce='max')`` into ``new_zeros`` (not a graph tensor),
    then ``backward``; changing ``src`` in place afterwards is still refused, as by torch."""
    results = []
    for lib in (torch, shardflow):
        src = lib.tensor([[1.0, 5.0], [-2.0, 3.0], [4.0, 4.0]], requires_grad=True)
        index = lib.tensor([0, 1, 0]).view(-1, 1).expand_as(src)
        h = src * 2
        out = h.new_zeros(2, 2).scatter_reduce_(0, index, h, reduce="amax", include_self=False)
        out.sum().backward(retain_graph=True)
        results.append(src.grad.numpy().copy())
        with torch.no_grad() if lib is torch else shardflow.no_grad():
            h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
    np.testing.assert_array_equal(results[1], results[0])
