"""``F.cross_entropy`` with class indices held in a float tensor (labels made from a float
NumPy array: a common first-program mistake) raises torch's RuntimeError ("expected target
dtype to be Long or Byte, but got Float"); shardflow raised ValueError, so an ``except
RuntimeError`` written for torch missed it. A float target of another shape than the
index shape stays a ValueError (torch's type for a batch-size mismatch)."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("input_shape, target_shape, dtype", [
    ((2, 3), (2,), "float32"), ((2, 3, 4), (2, 4), "float32"), ((2, 3), (2,), "float64"),
])
def test_float_class_indices_raise_runtime_error_like_torch(input_shape, target_shape, dtype):
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte") as want:
        torch.nn.functional.cross_entropy(torch.ones(*input_shape), torch.zeros(*target_shape, dtype=getattr(torch, dtype)))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte") as got:
        shardflow.nn.functional.cross_entropy(shardflow.ones(*input_shape),
                                              shardflow.zeros(*target_shape, dtype=getattr(shardflow, dtype)))
    assert str(want.value).split(":")[0] == str(got.value).split(":")[0]  # "... but got Float" / "Double"
    assert "target.long()" in str(got.value)
    with pytest.raises(RuntimeError):
        shardflow.nn.CrossEntropyLoss()(shardflow.ones(*input_shape), shardflow.zeros(*target_shape))


def test_batch_size_mismatch_stays_value_error_like_torch():
    with pytest.raises(ValueError):
        torch.nn.functional.cross_entropy(torch.ones(2, 3), torch.zeros(3))
    with pytest.raises(ValueError, match="class probabilities"):
        shardflow.nn.functional.cross_entropy(shardflow.ones(2, 3), shardflow.zeros(3))


def test_probabilities_and_integer_targets_still_work():
    logits = [[0.5, -1.0, 2.0], [0.1, 0.2, 0.3]]
    for lib in (torch, shardflow):
        x = lib.tensor(logits)
        a = lib.nn.functional.cross_entropy(x, lib.tensor([2, 0])).item()
        b = lib.nn.functional.cross_entropy(x, lib.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])).item()
        assert abs(a - b) < 1e-6
