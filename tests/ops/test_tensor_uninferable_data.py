"""Data with no tensor dtype raises torch's types: ``torch.tensor(None)``, ``[1, None]``, an
object or a dict give "Could not infer dtype of NoneType" as a RuntimeError (it was a
TypeError "cannot make a tensor from NoneType of dtype object"; the error is still a
TypeError too), one string a TypeError, a list of strings a ValueError."""

import pytest
import torch

import shardflow

CASES = {
    "none": (RuntimeError, "Could not infer dtype of NoneType", lambda lib: lib.tensor(None)),
    "none_in_list": (RuntimeError, "Could not infer dtype of NoneType", lambda lib: lib.tensor([1, None])),
    "as_tensor_none": (RuntimeError, "Could not infer dtype of NoneType", lambda lib: lib.as_tensor(None)),
    "object": (RuntimeError, "Could not infer dtype of object", lambda lib: lib.tensor(object())),
    "dict": (RuntimeError, "Could not infer dtype of dict", lambda lib: lib.tensor({1: 2})),
    "string": (TypeError, "invalid data type 'str'", lambda lib: lib.tensor("a")),
    "list_of_strings": (ValueError, "too many dimensions 'str'", lambda lib: lib.tensor(["a"])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_uninferable_data_raises_like_torch(name):
    kind, match, make = CASES[name]
    for lib in (torch, shardflow):
        with pytest.raises(kind, match=match):
            make(lib)
