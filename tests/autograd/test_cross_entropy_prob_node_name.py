"""``cross_entropy`` with class-probability targets (mixup's soft labels, label-smoothing
losses) prints torch's ``grad_fn``: torch composes it from ops, ending in ``DivBackward1``
for 'mean' and ``NegBackward0`` for 'sum' / 'none' (it was ``CrossEntropyProbBackward0``)."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_soft_target_node_name_like_torch(reduction, smoothing, weighted):
    names = []
    for lib in (torch, shardflow):
        lib.manual_seed(0)
        x = lib.randn(3, 4, requires_grad=True)
        soft = lib.softmax(lib.randn(3, 4), 1)
        w = lib.rand(4) if weighted else None
        loss = lib.nn.functional.cross_entropy(x, soft, weight=w, reduction=reduction, label_smoothing=smoothing)
        names.append((loss.grad_fn.name(), repr(loss.sum() if reduction == "none" else loss).split("grad_fn=")[-1]))
    assert names[1][0] == names[0][0]
    if reduction != "none":
        assert names[1][1] == names[0][1]
