"""Creation and linalg details found by printing the same snippets on torch 2.13 and on
shardflow: ``torch.tensor`` of ragged lists names the dim and lengths as torch does,
``torch.tensor(tensor)`` warns as torch does, and ``torch.linalg.slogdet`` returns torch's
``linalg_slogdet`` named tuple (``torch.slogdet`` keeps ``slogdet``)."""

import warnings

import pytest
import torch

import shardflow

LIBS = pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])


@LIBS
@pytest.mark.parametrize("data, message", [
    ([[1, 2], [3]], "expected sequence of length 2 at dim 1 (got 1)"),
    ([[[1], [2]], [[3], [4, 5]]], "expected sequence of length 1 at dim 2 (got 2)"),
    ([[1.0, 2.0], [3.0, 4.0, 5.0]], "expected sequence of length 2 at dim 1 (got 3)"),
])
def test_ragged_nested_lists_name_the_dim_and_lengths(lib, data, message):
    with pytest.raises(ValueError) as info:
        lib.tensor(data)
    assert str(info.value) == message


@LIBS
def test_tensor_of_a_tensor_warns_and_copies(lib):
    src = lib.ones(2)
    with pytest.warns(UserWarning, match=r"To copy construct from a tensor, it is recommended to use "
                                         r"sourceTensor.detach\(\).clone\(\)"):
        t = lib.tensor(src)
    t.add_(1)
    assert src.tolist() == [1.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lib.tensor([lib.tensor(1.0), lib.tensor(2.0)])  # a list of 0-d tensors: no warning


def test_linalg_slogdet_return_type_names_match_torch():
    a = [[1.0, 2.0], [3.0, 4.0]]
    for ours, theirs in [(shardflow.linalg.slogdet(shardflow.tensor(a)), torch.linalg.slogdet(torch.tensor(a))),
                         (shardflow.slogdet(shardflow.tensor(a)), torch.slogdet(torch.tensor(a)))]:
        assert type(ours).__name__ == type(theirs).__name__
        assert ours.sign.item() == theirs.sign.item()
        assert abs(ours.logabsdet.item() - theirs.logabsdet.item()) < 1e-6


@LIBS
@pytest.mark.parametrize("call, exc, message", [
    (lambda lib: lib.zeros(-1), RuntimeError, "Dimension size must be non-negative"),
    (lambda lib: lib.zeros(2.5), TypeError, ""),
    (lambda lib: lib.arange(0, 10, 0), RuntimeError, "step must be nonzero"),
    (lambda lib: lib.arange(0, 10, -1), RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    (lambda lib: lib.arange(10, 0), RuntimeError, "upper bound and lower bound inconsistent with step sign"),
    (lambda lib: lib.randint(5, 2, (2,)), RuntimeError, "random_ expects 'from' to be less than 'to'"),
    (lambda lib: lib.nn.functional.cross_entropy(lib.ones(3, 4), lib.ones(3, 1, dtype=lib.long)), RuntimeError, ""),
])
def test_bad_arguments_raise_torchs_exception_types(lib, call, exc, message):
    # (shardflow returned an empty tensor for arange(0, 10, -1), as NumPy does)
    with pytest.raises(exc, match=message):
        call(lib)
