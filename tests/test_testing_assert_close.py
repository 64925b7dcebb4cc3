"""``torch.testing.assert_close`` and ``make_tensor`` against torch 2.13: the same inputs pass
or fail the same way, with the same exception type and message (dtype names aside)."""

import math

import numpy as np
import pytest
import torch

import shardflow as sf

NAN = float("nan")


def _outcome(lib, actual, expected, **kw):
    try:
        lib.testing.assert_close(actual, expected, **kw)
    except Exception as e:  # noqa: BLE001 - the type is part of what is compared
        # the type names differ only by package: shardflow.float32, shardflow.autograd.tensor.Tensor
        return type(e).__name__, str(e).replace("shardflow.autograd.tensor.Tensor", "torch.Tensor") \
            .replace("shardflow.", "torch.")
    return None


def _conv(lib, obj):
    """The same structure with torch or shardflow tensors (tagged as ("T", values, dtype))."""
    if isinstance(obj, tuple) and obj and obj[0] == "T":
        return lib.tensor(obj[1], dtype=getattr(lib, obj[2]))
    if isinstance(obj, list):
        return [_conv(lib, o) for o in obj]
    if isinstance(obj, dict):
        return {k: _conv(lib, v) for k, v in obj.items()}
    return obj


def T(values, dtype="float32"):
    return ("T", values, dtype)


CASES = [
    (T([1.0, 2.0, 3.0]), T([1.0, 2.0, 3.0]), {}),
    (T([1.0, 2.0, 3.0]), T([1.0, 2.5, 3.0]), {}),
    (T([1.0, 2.0]), T([1.0, 2.1]), {}),
    (T([1.0, 2.0]), T([1.0, 2.0 + 1e-6]), {}),  # within float32's default tolerance
    (T([[0.0, 1.0], [2.0, 3.0]]), T([[1e-3, 1.0], [2.0, 4.0]]), {}),
    (T([0.0, 1.0]), T([1e-3, 1.0]), {"rtol": 0.0, "atol": 1e-2}),
    (T([1.0, 2.0]), T([1.0, 2.0]), {"rtol": 1.0}),
    (T([1.0, NAN]), T([1.0, NAN]), {}),
    (T([1.0, NAN]), T([1.0, NAN]), {"equal_nan": True}),
    (T([1.0, math.inf]), T([1.0, math.inf]), {}),
    (T([1.0, math.inf]), T([1.0, -math.inf]), {}),
    (T([1, 2, 3], "int64"), T([1, 3, 3], "int64"), {}),
    (T([True, False], "bool"), T([True, True], "bool"), {}),
    (T([1.0, 2.0]), T([1.0, 2.0], "float64"), {}),
    (T([1.0, 2.0]), T([1.0, 2.0000001], "float64"), {"check_dtype": False}),
    (T([1.0, 2.0], "float16"), T([1.0, 2.001], "float16"), {}),
    (T([1.0, 2.0], "bfloat16"), T([1.0, 2.02], "bfloat16"), {}),
    (T([1.0, 2.0], "float64"), T([1.0, 2.0 + 1e-6], "float64"), {}),
    (T([1.0, 2.0]), T([1.0, 2.0, 3.0]), {}),
    (T(1.0), T(1.5), {}),
    (T(1.0), T(1.0 + 1e-7), {}),
    ([T([1.0]), {"a": T([0.0, 0.0])}], [T([1.0]), {"a": T([0.0, NAN])}], {}),
    ({"a": 1}, {"b": 1}, {}),
    ([1, 2], [1], {}),
    (1, 1.0, {}),
    (1, 1.0, {"check_dtype": False}),
    (1.0, 1.0 + 1e-9, {}),
    (1.0, 1.1, {}),
    (True, False, {}),
    (None, 1, {}),
    (None, None, {}),
    (T([1.0, 1.0]), [1.0, 1.0], {}),
    (T([1.0, 2.0]), T([1.0, 2.1]), {"msg": "custom"}),
    (T([1.0, 2.0]), T([1.0, 2.1]), {"msg": lambda m: "X" + m}),
    (T([1.0, 2.0]), T([1.0, 2.1]), {"rtol": 0.1, "atol": 0.0}),
    (T([[1.0, 2.0, 3.0]] * 3), T([[1.0, 2.0, 3.0]] * 2 + [[1.0, 0.0, 9.0]]), {}),
]


@pytest.mark.parametrize("actual, expected, kw", CASES)
def test_assert_close_matches_torch(actual, expected, kw):
    ours = _outcome(sf, _conv(sf, actual), _conv(sf, expected), **kw)
    theirs = _outcome(torch, _conv(torch, actual), _conv(torch, expected), **kw)
    assert ours == theirs


def test_tensor_likes_message_names_counts_and_indices():
    with pytest.raises(AssertionError) as e:
        sf.testing.assert_close(sf.tensor([1.0, 2.0, 3.0, 4.0]), sf.tensor([1.0, 2.5, 3.0, 5.0]))
    msg = str(e.value)
    assert msg.startswith("Tensor-likes are not close!")
    assert "Mismatched elements: 2 / 4 (50.0%)" in msg
    assert "Greatest absolute difference: 1.0 at index (3,) (up to 1e-05 allowed)" in msg


def test_numpy_arrays_and_parameters():
    sf.testing.assert_close(np.ones(3), np.ones(3))
    p = sf.nn.Parameter(sf.ones(2))
    sf.testing.assert_close(p, sf.ones(2))
    with pytest.raises(TypeError, match="No comparison pair"):
        sf.testing.assert_close(p, sf.ones(2), allow_subclasses=False)
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or omitted, but got no rtol"):
        sf.testing.assert_close(sf.ones(1), sf.ones(1), atol=1)


def test_project_helpers_still_import():
    from shardflow.testing import gradcheck, mpi, opspec  # noqa: F401


# ---------------------------------------------------------------- make_tensor
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8", "bool",
                                   "complex64"])
def test_make_tensor_ranges_like_torch(dtype):
    sd, td = getattr(sf, dtype), getattr(torch, dtype)
    t = sf.testing.make_tensor(4, 50, dtype=sd, device="cpu")
    r = torch.testing.make_tensor(4, 50, dtype=td, device="cpu")
    assert t.shape == tuple(r.shape) and t.dtype == sd
    a = t.to(sf.float32).numpy() if dtype == "bfloat16" else t.numpy()
    parts = [a.real, a.imag] if dtype == "complex64" else [a]
    lo, hi = {"bool": (0, 1), "uint8": (0, 9)}.get(dtype, (-9, 9))
    for part in parts:
        assert part.min() >= lo and part.max() <= hi
    assert len(np.unique(a)) > 1


def test_make_tensor_options():
    sf.manual_seed(0)
    a = sf.testing.make_tensor((3, 4), dtype=sf.float32, device="cpu", low=-1, high=1, requires_grad=True)
    sf.manual_seed(0)
    b = sf.testing.make_tensor(3, 4, dtype=sf.float32, device="cpu", low=-1, high=1)
    assert a.requires_grad and not b.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), b.numpy())  # seeded by shardflow's RNG
    assert np.abs(a.detach().numpy()).max() <= 1
    nc = sf.testing.make_tensor(3, 4, dtype=sf.int32, device="cpu", noncontiguous=True)
    assert nc.shape == (3, 4) and not nc.is_contiguous()
    nz = sf.testing.make_tensor(200, dtype=sf.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    assert (nz.numpy() != 0).all()
    for kw, err, match in [({"dtype": sf.int64, "requires_grad": True}, ValueError, "not supported for boolean"),
                           ({"dtype": sf.float32, "low": 3, "high": 2}, ValueError, "must be less than"),
                           ({"dtype": sf.uint8, "low": -5, "high": -1}, ValueError, "only supports"),
                           ({"dtype": sf.float32, "low": NAN}, ValueError, "cannot be NaN")]:
        with pytest.raises(err, match=match):
            sf.testing.make_tensor(2, device="cpu", **kw)
        with pytest.raises(err, match=match):
            torch.testing.make_tensor(2, device="cpu", **{k: getattr(torch, str(v).split(".")[-1])
                                                          if k == "dtype" else v for k, v in kw.items()})
