"""``torch.save`` of an object pickle cannot write raises the exception type torch's (C)
pickler raises: ``PicklingError`` for a module-level lambda, ``AttributeError`` for a local
class's instance or a local function (shardflow raised TypeError for all, so ``except
pickle.PicklingError`` missed it). The message still says what shardflow tried first."""

import io
import pickle

import pytest
import torch

import shardflow

square = lambda: 1  # noqa: E731  (a module-level lambda: pickle finds no attribute "<lambda>")


def _local_instance():
    class Local:
        pass

    return Local()


def _local_function():
    def inner():
        return 1

    return inner


@pytest.mark.parametrize("make, error", [(lambda: square, pickle.PicklingError),
                                         (_local_instance, AttributeError),
                                         (_local_function, AttributeError)],
                         ids=["lambda", "local-class", "local-function"])
@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_unpicklable_object_raises_pickles_error(lib, make, error):
    with pytest.raises(error, match="[Cc]an't pickle") as info:
        lib.save(make(), io.BytesIO())
    if lib is shardflow:
        assert "pickling it as torch.save does failed too" in str(info.value)
