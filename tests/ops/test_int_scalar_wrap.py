"""A Python int outside an integer tensor's dtype in add/sub/mul: PyTorch casts it into the
dtype with wraparound (``uint8 tensor + 1000`` adds 232), NumPy 2 raised OverflowError."""

import numpy as np
import pytest
import torch

import shardflow as sf

CASES = [
    ("add", lambda lib, t: t + 1000), ("radd", lambda lib, t: 1000 + t), ("sub", lambda lib, t: t - 1000),
    ("rsub", lambda lib, t: 1000 - t), ("mul", lambda lib, t: t * 1000), ("add_alpha", lambda lib, t: t.add(1000, alpha=2)),
    ("sub_alpha", lambda lib, t: lib.sub(t, 300, alpha=3)), ("add_", lambda lib, t: t.clone().add_(1000)),
    ("mul_neg", lambda lib, t: t * -200),
]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
@pytest.mark.parametrize("name, f", CASES, ids=[c[0] for c in CASES])
def test_out_of_range_int_operand_wraps_as_torch(dtype, name, f):
    v = np.array([0, 5, 100, 127], dtype=dtype)
    want = f(torch, torch.tensor(v))
    got = f(sf, sf.tensor(v))
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_beyond_int64_is_refused_as_torch():
    for lib in (torch, sf):
        with pytest.raises((OverflowError, RuntimeError)):
            lib.tensor([1], dtype=lib.uint8) + 2 ** 70
