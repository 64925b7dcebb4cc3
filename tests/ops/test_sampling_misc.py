"""interpolate / unfold / fold beyond the spec table: argument errors as PyTorch raises them,
integer input, non-finite values, and the nn modules (Upsample, Unfold, Fold) vs torch."""

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn
import shardflow.nn.functional as F


def _x(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


_BAD_CALLS = [
    ("interpolate", (2, 2, 4, 4), dict(size=5, scale_factor=2)),
    ("interpolate", (2, 2, 4, 4), dict()),
    ("interpolate", (2, 2, 4, 4), dict(size=5, align_corners=True)),
    ("interpolate", (2, 2, 4, 4), dict(size=(5, 6, 7))),
    ("interpolate", (2, 2, 4, 4), dict(scale_factor=(2.0,), mode="bilinear")),
    ("interpolate", (2, 2, 4), dict(size=5, mode="bilinear")),
    ("interpolate", (2, 2, 4, 4, 4), dict(size=5, mode="linear")),
    ("interpolate", (2, 2, 4, 4), dict(size=5, recompute_scale_factor=True)),
    ("interpolate", (2, 2, 4, 4), dict(size=5, antialias=True)),
    ("interpolate", (2, 2, 4, 4), dict(size=5, mode="cubic")),
    ("interpolate", (2, 4), dict(size=5)),
    ("interpolate", (2, 2, 4, 4), dict(size=(0, 3))),
    ("fold", (2, 7, 9), dict(output_size=(4, 4), kernel_size=2)),
    ("fold", (2, 8, 8), dict(output_size=(4, 4), kernel_size=2)),
    ("fold", (2, 3, 4, 5), dict(output_size=(4, 4), kernel_size=2)),
    ("unfold", (1, 1, 2, 2), dict(kernel_size=3)),
    ("unfold", (2, 3, 4, 4, 4), dict(kernel_size=2)),
]


@pytest.mark.parametrize("fn,shape,kw", _BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(_BAD_CALLS)])
def test_argument_errors_match_torch(fn, shape, kw):
    x = _x(shape)
    with pytest.raises(Exception) as te:
        getattr(torch.nn.functional, fn)(torch.tensor(x), **kw)
    with pytest.raises(type(te.value)) as se:
        getattr(F, fn)(sf.tensor(x), **kw)
    # same exception type and PyTorch's message (shardflow may add how to fix it)
    assert str(te.value).rstrip(".").split("\n")[0] in str(se.value), (str(se.value), str(te.value))


def test_nearest_keeps_integer_dtype_and_linear_refuses_it():
    x = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
    got = F.interpolate(sf.tensor(x), scale_factor=(1.5, 2))
    want = torch.nn.functional.interpolate(torch.tensor(x), scale_factor=(1.5, 2))
    assert got.dtype == sf.uint8
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="floating-point input"):
        F.interpolate(sf.tensor(x), size=5, mode="bilinear")


def test_non_finite_value_reaches_only_its_neighbours_like_torch():
    x = _x((1, 1, 4, 6))
    x[0, 0, 1, 1] = np.inf
    for kw in (dict(size=(8, 12), mode="bilinear"), dict(size=(7, 9), mode="bicubic"), dict(scale_factor=2)):
        got = F.interpolate(sf.tensor(x), **kw).numpy()
        want = torch.nn.functional.interpolate(torch.tensor(x), **kw).numpy()
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        assert np.isfinite(got).sum() > got.size // 2
        np.testing.assert_allclose(got[np.isfinite(got)], want[np.isfinite(want)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("build", [
    lambda m: m.Upsample(scale_factor=2, mode="bilinear"),
    lambda m: m.Upsample(size=(5, 7), mode="bicubic", align_corners=True),
    lambda m: m.UpsamplingNearest2d(scale_factor=3),
    lambda m: m.UpsamplingBilinear2d(size=(6, 5)),
    lambda m: m.Unfold(kernel_size=2, padding=1),
    lambda m: m.Fold(output_size=(4, 6), kernel_size=(2, 3)),
])
def test_modules_match_torch(build):
    mine, ref = build(nn), build(torch.nn)
    assert repr(mine) == repr(ref)
    x = _x((2, 24, 12), 1) if isinstance(ref, torch.nn.Fold) else _x((2, 2, 3, 4), 1)
    xs, xt = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ys, yt = mine(xs), ref(xt)
    np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    ys.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
