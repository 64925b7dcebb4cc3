"""An empty list given to ``cat`` (and ``concat``/``concatenate``) raises torch's ValueError,
and to ``stack``/``hstack``/``vstack`` torch's RuntimeError (``cat`` raised RuntimeError)."""

import pytest
import torch

import shardflow

CASES = {
    "cat": (ValueError, "expected a non-empty list of Tensors", lambda lib: lib.cat([])),
    "cat_tuple_dim": (ValueError, "expected a non-empty list of Tensors", lambda lib: lib.cat((), dim=1)),
    "concat": (ValueError, "expected a non-empty list of Tensors", lambda lib: lib.concat([])),
    "concatenate": (ValueError, "expected a non-empty list of Tensors", lambda lib: lib.concatenate([])),
    "stack": (RuntimeError, "stack expects a non-empty TensorList", lambda lib: lib.stack([])),
    "hstack": (RuntimeError, "hstack expects a non-empty TensorList", lambda lib: lib.hstack([])),
    "vstack": (RuntimeError, "vstack expects a non-empty TensorList", lambda lib: lib.vstack([])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_empty_tensor_list_raises_like_torch(name):
    kind, match, make = CASES[name]
    for lib in (torch, shardflow):
        with pytest.raises(kind, match=match) as caught:
            make(lib)
        assert type(caught.value) is kind, (lib.__name__, caught.value)
