"""Max pooling over windows holding NaN reports PyTorch's position: its CPU kernel moves on
``val > max || isnan(val)``, so the window's last NaN, and the gradient goes there. Before,
shardflow kept the first strict maximum and let NaN move nothing: the index pointed at a
number (1.0 where the window's maximum was NaN) and the gradient went to it. Checked on the
NumPy path, the 2x2 Numba kernel, padding and dilation, and the adaptive pools."""

import numpy as np
import pytest
import torch

import shardflow
from shardflow import kernels

nan = float("nan")


def _x(shape, seed, nan_frac=0.3):
    r = np.random.default_rng(seed)
    x = r.standard_normal(shape)
    x[r.random(shape) < nan_frac] = np.nan
    return x


def _check(fn, x, dtype="float32", **kw):
    outs = []
    for lib in (torch, shardflow):
        t = lib.tensor(x.astype(dtype), requires_grad=True)
        v, i = fn(lib)(t, return_indices=True, **kw)
        v.sum().backward()
        outs.append((v.detach().numpy(), i.numpy(), t.grad.numpy()))
    (tv, ti, tg), (sv, si, sg) = outs
    np.testing.assert_array_equal(si, ti)
    np.testing.assert_array_equal(np.isnan(sv), np.isnan(tv))
    np.testing.assert_array_equal(np.nan_to_num(sv), np.nan_to_num(tv))
    np.testing.assert_array_equal(np.isnan(sg), np.isnan(tg))


@pytest.mark.parametrize("kw", [
    dict(kernel_size=2), dict(kernel_size=3, stride=1), dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2, dilation=2), dict(kernel_size=3, stride=2, ceil_mode=True),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool2d_nan_position_like_torch(kw, dtype):
    _check(lambda lib: lib.nn.functional.max_pool2d, _x((2, 3, 7, 8), 0), dtype, **kw)


def test_the_2x2_kernel_and_the_numpy_path_agree_with_torch(monkeypatch):
    x = _x((2, 2, 8, 8), 1, 0.4)
    _check(lambda lib: lib.nn.functional.max_pool2d, x, kernel_size=2)  # kernel when numba is there
    monkeypatch.setattr(kernels, "usable", lambda *a, **k: False)
    _check(lambda lib: lib.nn.functional.max_pool2d, x, kernel_size=2)  # the NumPy path


def test_documented_case():
    x = np.array([[[[1.0, nan, 3.0, nan], [nan, 2.0, 5.0, 1.0]]]])
    i = shardflow.nn.functional.max_pool2d(shardflow.tensor(x), 2, return_indices=True)[1]
    assert i.tolist() == [[[[4, 3]]]]  # torch: the last NaN of each window


@pytest.mark.parametrize("d", [1, 3])
def test_max_pool_1d_3d(d):
    shape = (2, 2) + (6,) * d
    fn = getattr(torch.nn.functional, f"max_pool{d}d").__name__
    _check(lambda lib: getattr(lib.nn.functional, fn), _x(shape, 2), kernel_size=3, stride=2, padding=1)


@pytest.mark.parametrize("d,out", [(1, 3), (2, (3, 2)), (3, 2)])
def test_adaptive_max_pool_nan_position_like_torch(d, out):
    shape = (2, 2) + (7,) * d
    _check(lambda lib: getattr(lib.nn.functional, f"adaptive_max_pool{d}d"), _x(shape, 3), output_size=out)


def test_no_nan_keeps_the_first_maximum():
    x = np.array([[[[2.0, 2.0], [2.0, 1.0]]]])
    for lib in (torch, shardflow):
        assert lib.nn.functional.max_pool2d(lib.tensor(x), 2, return_indices=True)[1].item() == 0
