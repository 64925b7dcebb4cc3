"""Gradient clipping with complex gradients, against torch: ``clip_grad_norm_`` and
``get_total_norm`` count the moduli of complex elements and return a real norm (session 37
raised ``TypeError`` from ``float(complex)``, and its 2-norm was ``sqrt(sum(z*z))``);
``clip_grad_value_`` refuses complex gradients with torch's ``NotImplementedError`` (it
clamped the real part and dropped the imaginary part)."""

import math

import numpy as np
import pytest
import torch

import shardflow as sf


def _grads():
    rng = np.random.default_rng(0)
    g = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    return g, rng.standard_normal(5).astype(np.float32)


def _params(lib):
    g, h = _grads()
    p = lib.nn.Parameter(lib.zeros(3, 4, dtype=lib.cfloat))
    q = lib.nn.Parameter(lib.zeros(5))
    p.grad, q.grad = lib.tensor(g), lib.tensor(h)
    return p, q


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_clip_grad_norm_complex_like_torch(norm_type):
    out = {}
    for lib in (sf, torch):
        p, q = _params(lib)
        total = lib.nn.utils.clip_grad_norm_([p, q], 0.5, norm_type=norm_type)
        out[lib.__name__] = (total.dtype, float(total), p.grad.numpy(), q.grad.numpy())
    (dt_s, n_s, p_s, q_s), (dt_t, n_t, p_t, q_t) = out["shardflow"], out["torch"]
    assert str(dt_s).split(".")[-1] == str(dt_t).split(".")[-1] == "float32"
    np.testing.assert_allclose(n_s, n_t, rtol=1e-5)
    np.testing.assert_allclose(p_s, p_t, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(q_s, q_t, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_get_total_norm_complex_is_real(norm_type):
    g, _ = _grads()
    n_s = sf.nn.utils.get_total_norm([sf.tensor(g)], norm_type)
    n_t = torch.nn.utils.get_total_norm([torch.tensor(g)], norm_type)
    assert n_s.dtype == sf.float32 and n_t.dtype == torch.float32
    np.testing.assert_allclose(n_s.numpy(), n_t.numpy(), rtol=1e-5)


@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_value_complex_raises_like_torch(foreach):
    for lib in (torch, sf):
        p, q = _params(lib)
        before = p.grad.numpy().copy(), q.grad.numpy().copy()
        with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
            lib.nn.utils.clip_grad_value_([p], 0.1, foreach=foreach)
        np.testing.assert_array_equal(p.grad.numpy(), before[0])
