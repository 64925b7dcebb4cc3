"""``cross_entropy`` with a float (class-probability) target of the wrong shape raises
torch's type: ValueError where the batch sizes differ, RuntimeError otherwise (it raised
ValueError for every shape)."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("shapes", [((2, 3), (2, 4)), ((2, 3, 4), (2, 3, 5)), ((3,), (4,)), ((2, 3), (3, 3))],
                         ids=["classes", "spatial", "unbatched", "batch"])
def test_cross_entropy_float_target_of_another_shape_raises_torchs_type(shapes):
    """A float (probability) target of the wrong shape: torch's ValueError only where the
    batch sizes differ, RuntimeError otherwise (shardflow raised ValueError for all)."""
    (ishape, tshape), kinds = shapes, set()
    for lib in (torch, shardflow):
        with pytest.raises((RuntimeError, ValueError)) as caught:
            lib.nn.functional.cross_entropy(lib.ones(*ishape), lib.ones(*tshape))
        kinds.add(RuntimeError if isinstance(caught.value, RuntimeError) else ValueError)
    assert len(kinds) == 1, shapes
