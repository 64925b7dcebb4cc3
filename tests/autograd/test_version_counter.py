"""``Tensor._version`` as PyTorch's: an int, 0 for a new tensor, +1 per in-place change, shared
by views; reading it keeps the value (it was the shared list itself, so ``v = t._version``
followed by ``t.add_(1)`` compared equal afterwards: a silent wrong answer for code that
checks whether a tensor was modified)."""

import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("lib", [torch, sf], ids=["torch", "shardflow"])
def test_version_is_an_int_that_in_place_changes_move(lib):
    x = lib.ones(4)
    v0 = x._version
    x.add_(1)
    view = x[1:]
    view.mul_(2)
    x[0] = 5.0
    got = (v0, x._version, view._version, type(x._version).__name__)
    assert got == (0, 3, 3, "int")


def test_shardflow_versions_follow_torch_op_by_op():
    seen = {}
    for lib in (torch, sf):
        x = lib.zeros(3, requires_grad=False)
        y = x.view(3)
        trail = [x._version]
        for op in (lambda: x.add_(1), lambda: y.clamp_(max=0.5), lambda: x.zero_(), lambda: x.fill_(2.0),
                   lambda: lib.add(x, 1, out=x)):
            op()
            trail.append((x._version, y._version))
        seen[lib.__name__] = trail
    assert seen["shardflow"] == seen["torch"]
