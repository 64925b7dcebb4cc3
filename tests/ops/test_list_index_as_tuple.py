"""A list index holding a sequence, slice, None, Ellipsis or tensor is torch's (and old
NumPy's) ``x[tuple(index)]``, with torch's deprecation warning. shardflow read it as one index
tensor: ``x[[[0, 1], [1, 2]]]`` gave rows instead of the elements (0, 1), (1, 2), silently."""
import warnings

import pytest
import torch

import shardflow as sf

CASES = {
    "lists": lambda lib: [[0, 1], [1, 2]], "int and list": lambda lib: [0, [1, 2]],
    "slice": lambda lib: [0, slice(None)], "None": lambda lib: [0, None], "Ellipsis": lambda lib: [Ellipsis, 1],
    "tensors": lambda lib: [lib.tensor([0, 1]), lib.tensor([1, 2])], "one tensor": lambda lib: [lib.tensor([0, 1])],
    "tuples": lambda lib: [(0, 1), (1, 2)], "one list": lambda lib: [[0, 1]],
    "ints (a tensor index)": lambda lib: [0, 1], "bools (a mask)": lambda lib: [True, False],
}


def _run(lib, make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = lib.arange(24.0).view(2, 3, 4).requires_grad_()
        got = x[make(lib)]
        got.sum().backward()
        y = lib.zeros(2, 3, 4)
        y[make(lib)] = 7.0
    warned = [str(w.message).split(" (Triggered")[0] for w in caught if "non-tuple sequence" in str(w.message)]
    return got.tolist(), x.grad.tolist(), y.tolist(), sorted(set(warned))


@pytest.mark.parametrize("case", sorted(CASES))
def test_list_index_as_torch(case):
    assert _run(sf, CASES[case]) == _run(torch, CASES[case])
