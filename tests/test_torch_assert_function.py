"""``torch._assert(condition, message)`` (torchvision's VisionTransformer checks its input
shapes with it) against torch: nothing for a true condition (a bool or a one-element
tensor), AssertionError carrying the message for a false one."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_assert_passes_and_fails_like_torch(lib):
    assert lib._assert(True, "unused") is None
    assert lib._assert(lib.tensor([1.0]) > 0, "unused") is None
    with pytest.raises(AssertionError, match="^Wrong image height!$"):
        lib._assert(3 == 4, "Wrong image height!")
    with pytest.raises(AssertionError, match="Expected 3 dims"):
        lib._assert(lib.zeros(2, 2).dim() == 3, "Expected 3 dims")
