"""Integer clamps with Python int bounds outside the dtype, as torch 2.13 converts them: a
bound past the range raises torch's RuntimeError ("value cannot be converted to type uint8_t
without overflow"), a negative bound of an unsigned dtype wraps (uint8: -3 -> 253, so
``clamp(min=-3)`` gives 253 everywhere), an int past 64 bits raises OverflowError. shardflow
raised NumPy's OverflowError for a wrapping bound where torch computes."""

import pytest
import torch

import shardflow as sf

BOUNDS = [dict(min=-3), dict(max=300), dict(min=-300), dict(min=2**70), dict(min=-1, max=5),
          dict(min=2, max=7), dict(min=True)]


def _outcome(lib, dtype_name, kw, inplace, zero_d):
    data = 5 if zero_d else [5, 200 if dtype_name == "uint8" else 100]
    x = lib.tensor(data, dtype=getattr(lib, dtype_name))
    try:
        r = x.clamp_(**kw) if inplace else lib.clamp(x, **kw)
    except (RuntimeError, OverflowError) as e:
        return type(e).__name__, str(e).split(" (got")[0]
    return "ok", str(r.dtype).split(".")[-1], r.tolist()


@pytest.mark.parametrize("zero_d", [False, True])
@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("dtype_name", ["uint8", "int8", "int64"])
@pytest.mark.parametrize("kw", BOUNDS, ids=str)
def test_integer_clamp_bounds_like_torch(kw, dtype_name, inplace, zero_d):
    assert _outcome(sf, dtype_name, kw, inplace, zero_d) == _outcome(torch, dtype_name, kw, inplace, zero_d)
