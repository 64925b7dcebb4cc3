"""softmax / log_softmax of integer and bool tensors, as torch 2.13 answers them: torch has no
integer kernel and raises ``NotImplementedError`` naming it (``softmax_lastdim_kernel_impl``
or ``softmax_kernel_impl``), except on an empty tensor, which comes back in its own dtype;
with ``dtype=`` the input is converted first. shardflow computed a float32 softmax of every
integer tensor (a result where torch's program stops)."""

import pytest
import torch

import shardflow as sf


def _inputs(lib):
    return {
        "int64 1-d": lib.tensor([1, 2]),
        "int64 2-d": lib.tensor([[1, 2]]),
        "bool": lib.tensor([True]),
        "uint8": lib.tensor([1], dtype=lib.uint8),
        "int64 0-d": lib.tensor(3),
        "empty int64": lib.empty(0, dtype=lib.int64),
        "empty int32 2-d": lib.empty(0, 2, dtype=lib.int32),
    }


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("case", list(_inputs(torch)))
def test_integer_softmax_like_torch(name, dim, case):
    x_t, x_s = _inputs(torch)[case], _inputs(sf)[case]
    try:
        expected = getattr(torch, name)(x_t, dim)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError) as got:
            getattr(sf, name)(x_s, dim)
        assert str(got.value).startswith(str(e)), (str(got.value), str(e))
        return
    got = getattr(sf.nn.functional, name)(x_s, dim)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(expected.shape)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_integer_softmax_with_dtype_converts_first(name):
    expected = getattr(torch, name)(torch.tensor([[1, 2, 4]]), -1, dtype=torch.float64)
    got = getattr(sf, name)(sf.tensor([[1, 2, 4]]), -1, dtype=sf.float64)
    assert got.dtype == sf.float64
    torch.testing.assert_close(torch.from_numpy(got.numpy()), expected)
