"""A float or bool index argument of gather/scatter/index_select/take/... raises an error
that is torch's RuntimeError (it was only an IndexError, so ``except RuntimeError`` written
for torch missed it) and still an IndexError (``index_fill``'s type in torch, and
``x[float_tensor]``'s)."""

import pytest
import torch

import shardflow

CASES = {
    "gather": lambda lib: lib.ones(2, 3).gather(1, lib.zeros(2, 3)),
    "gather_bool": lambda lib: lib.ones(2, 3).gather(1, lib.zeros(2, 3, dtype=lib.bool)),
    "index_select": lambda lib: lib.ones(2, 3).index_select(0, lib.tensor([0.0])),
    "scatter": lambda lib: lib.ones(2, 3).scatter(1, lib.zeros(2, 3), 1.0),
    "scatter_add": lambda lib: lib.ones(2, 3).scatter_add(1, lib.zeros(2, 3), lib.ones(2, 3)),
    "index_add": lambda lib: lib.ones(2, 3).index_add(0, lib.tensor([0.0]), lib.ones(1, 3)),
    "take": lambda lib: lib.take(lib.ones(3), lib.tensor([0.0])),
    "take_along_dim": lambda lib: lib.ones(2, 3).take_along_dim(lib.zeros(2, 3), 1),
}


@pytest.mark.parametrize("name", list(CASES))
def test_non_integer_index_argument_raises_runtime_error_like_torch(name):
    for lib in (torch, shardflow):
        with pytest.raises(RuntimeError):
            CASES[name](lib)
    with pytest.raises(IndexError, match=r"Expected dtype int32/int64 for index, got (Float|Bool)"):
        CASES[name](shardflow)


def test_index_fill_keeps_torchs_index_error():
    for lib in (torch, shardflow):
        with pytest.raises(IndexError):
            lib.ones(2, 3).index_fill(0, lib.tensor([0.0]), 1.0)

