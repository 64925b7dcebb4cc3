"""Class-index targets of ``cross_entropy`` / ``nll_loss`` (and their modules) must be int64
or uint8 (int64 only with spatial dimensions), as in torch: an int32/int16/int8/bool target is torch's RuntimeError ("expected
target dtype to be Long or Byte, but got Int"), not a silent cast (a CIFAR program whose
labels come from ``torch.from_numpy`` of an int32 array fails on torch; it failed nowhere on
shardflow)."""

import pytest
import torch

import shardflow

DTYPES = ["int8", "int16", "int32", "bool", "uint8", "int64"]


def _call(lib, fname, dtype, shape3d):
    lib.manual_seed(0)
    x = lib.randn(2, 4, 3) if shape3d else lib.randn(3, 4)
    y = lib.zeros(2, 3, dtype=lib.int64) if shape3d else lib.tensor([0, 1, 3])
    x = lib.log_softmax(x, 1) if fname == "nll_loss" else x
    return getattr(lib.nn.functional, fname)(x, y.to(getattr(lib, dtype)))


@pytest.mark.parametrize("shape3d", [False, True], ids=["NC", "NCd"])
@pytest.mark.parametrize("fname", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_target_dtype_like_torch(dtype, fname, shape3d):
    try:
        want = _call(torch, fname, dtype, shape3d)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            _call(shardflow, fname, dtype, shape3d)
        assert str(got.value).startswith(str(e)), (str(got.value), str(e))
        assert "target.long()" in str(got.value)
        return
    got = _call(shardflow, fname, dtype, shape3d)
    assert abs(got.item() - want.item()) < 1e-6


def test_the_module_refuses_int32_too():
    with pytest.raises(RuntimeError, match="but got Int"):
        torch.nn.CrossEntropyLoss()(torch.randn(2, 3), torch.tensor([0, 1], dtype=torch.int32))
    with pytest.raises(RuntimeError, match="but got Int"):
        shardflow.nn.CrossEntropyLoss()(shardflow.randn(2, 3), shardflow.tensor([0, 1], dtype=shardflow.int32))
