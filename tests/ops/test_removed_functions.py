"""torch's removed functions (matrix_rank, solve, lstsq, eig, symeig and the Tensor methods):
the same RuntimeError text as torch 2.13."""

import pytest
import torch

import shardflow as sf


def _message(call):
    with pytest.raises(RuntimeError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("name, args", [
    ("matrix_rank", ()), ("solve", ("A",)), ("lstsq", ("A",)), ("eig", ()), ("symeig", ()),
    ("eig", (True,)), ("symeig", (True,)),
])
def test_functions_and_methods_raise_torchs_text(name, args):
    xs, xt = sf.eye(3), torch.eye(3)
    sub_s = tuple(xs if a == "A" else a for a in args)
    sub_t = tuple(xt if a == "A" else a for a in args)
    expected = _message(lambda: getattr(torch, name)(xt, *sub_t))
    assert "now removed" in expected
    assert _message(lambda: getattr(sf, name)(xs, *sub_s)) == expected
    if hasattr(torch.Tensor, name):
        assert _message(lambda: getattr(xs, name)(*sub_s)) == _message(lambda: getattr(xt, name)(*sub_t))
