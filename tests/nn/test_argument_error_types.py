"""Argument errors of common vision calls raise torch's exception type (they raised
ValueError): an unknown ``padding`` string of ``F.conv*d`` (RuntimeError), a string
``padding`` of ``conv_transpose*d`` or pooling (TypeError; it was NumPy's puzzling "invalid
literal for int()"), an unknown GELU ``approximate`` (RuntimeError, also ``nn.GELU``'s
forward), an unknown ``div`` ``rounding_mode`` (RuntimeError)."""

import pytest
import torch

import shardflow

CASES = {
    "conv1d_padding": (RuntimeError, "Invalid padding string: 'foo'",
                       lambda lib: lib.nn.functional.conv1d(lib.ones(1, 2, 4), lib.ones(3, 2, 3), padding="foo")),
    "conv2d_padding": (RuntimeError, "Invalid padding string: 'foo'",
                       lambda lib: lib.nn.functional.conv2d(lib.ones(1, 2, 4, 4), lib.ones(3, 2, 3, 3), padding="foo")),
    "conv_transpose_padding": (TypeError, "must be tuple of ints, not str", lambda lib: lib.nn.functional.conv_transpose2d(
        lib.ones(1, 2, 4, 4), lib.ones(2, 3, 3, 3), padding="same")),
    "max_pool_padding": (TypeError, "must be tuple of ints, not str",
                         lambda lib: lib.nn.functional.max_pool2d(lib.ones(1, 2, 4, 4), 2, padding="same")),
    "gelu_functional": (RuntimeError, "approximate argument must be either none or tanh",
                        lambda lib: lib.nn.functional.gelu(lib.ones(2), approximate="fast")),
    "gelu_module": (RuntimeError, "approximate argument must be either none or tanh",
                    lambda lib: lib.nn.GELU(approximate="foo")(lib.ones(2))),
    "div_rounding_mode": (RuntimeError, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
                          lambda lib: lib.div(lib.tensor([1.0]), 2, rounding_mode="round")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_error_type_like_torch(name):
    kind, match, make = CASES[name]
    for lib in (torch, shardflow):
        with pytest.raises(kind, match=match) as caught:
            make(lib)
        assert isinstance(caught.value, kind), (lib.__name__, type(caught.value))


def test_valid_and_same_padding_strings_still_work():
    x, w = shardflow.ones(1, 2, 5, 5), shardflow.ones(3, 2, 3, 3)
    assert tuple(shardflow.nn.functional.conv2d(x, w, padding="same").shape) == (1, 3, 5, 5)
    assert tuple(shardflow.nn.functional.conv2d(x, w, padding="valid").shape) == (1, 3, 3, 3)
