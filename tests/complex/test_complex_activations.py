"""Activations of complex tensors as torch: ops with no complex kernel raise torch's
``NotImplementedError`` (NumPy orders complex numbers lexicographically, so shardflow's
relu, clamp, hardtanh, relu6, softmax, log_softmax, softmin, threshold, glu, softshrink,
hardshrink and dropout returned numbers torch never computes); ``F.normalize`` of a complex
tensor is computed as torch does (shardflow raised ``TypeError``), and so is
``F.rms_norm``."""

import numpy as np
import pytest
import torch

import shardflow as sf

_RNG = np.random.default_rng(0)
Z = (_RNG.standard_normal((2, 4)) + 1j * _RNG.standard_normal((2, 4))).astype(np.complex64)
CLAMP = "clamp is not supported for complex types"

REFUSED = {
    "relu": (lambda L, z: L.relu(z), CLAMP),
    "relu_inplace_module": (lambda L, z: L.nn.ReLU(inplace=True)(z.clone()), CLAMP),
    "relu_": (lambda L, z: z.clone().relu_(), CLAMP),
    "relu6": (lambda L, z: L.nn.ReLU6()(z), CLAMP),
    "hardtanh_": (lambda L, z: L.nn.functional.hardtanh_(z.clone()), CLAMP),
    "clamp": (lambda L, z: z.clamp(0, 1), CLAMP),
    "clamp_min": (lambda L, z: z.clamp_min(0), CLAMP),
    "clip_": (lambda L, z: z.clone().clip_(None, 1), CLAMP),
    "softmax_last": (lambda L, z: L.nn.functional.softmax(z, -1),
                     "\"softmax_lastdim_kernel_impl\" not implemented for 'ComplexFloat'"),
    "softmax_dim0": (lambda L, z: z.softmax(0),
                     "\"softmax_kernel_impl\" not implemented for 'ComplexFloat'"),
    "log_softmax": (lambda L, z: L.nn.LogSoftmax(-1)(z),
                    "\"log_softmax_lastdim_kernel_impl\" not implemented for 'ComplexFloat'"),
    "softmin": (lambda L, z: L.nn.functional.softmin(z, 1),
                "\"softmax_lastdim_kernel_impl\" not implemented for 'ComplexFloat'"),
    "threshold": (lambda L, z: L.nn.Threshold(0.1, 0.0)(z),
                  "\"threshold_cpu\" not implemented for 'ComplexFloat'"),
    "glu": (lambda L, z: L.nn.functional.glu(z), "\"glu_cpu\" not implemented for 'ComplexFloat'"),
    "softshrink": (lambda L, z: L.nn.Softshrink()(z),
                   "\"softshrink_check\" not implemented for 'ComplexFloat'"),
    "hardshrink": (lambda L, z: L.nn.functional.hardshrink(z),
                   "\"hardshrink_cpu\" not implemented for 'ComplexFloat'"),
    "dropout_train": (lambda L, z: L.nn.Dropout(0.5)(z),
                      "\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'"),
    "dropout2d_train": (lambda L, z: L.nn.functional.dropout2d(z.view(1, 2, 4)),
                        "\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_complex_activation_refused_like_torch(name):
    f, msg = REFUSED[name]
    for L in (torch, sf):
        with pytest.raises(NotImplementedError) as info:
            f(L, L.tensor(Z))
        assert str(info.value) == msg, (L.__name__, str(info.value))


@pytest.mark.parametrize("f", [lambda L, z: L.nn.functional.dropout(z, 0.5, training=False),
                               lambda L, z: L.nn.functional.dropout(z, 0.0),
                               lambda L, z: L.nn.functional.alpha_dropout(z, 0.5, training=False)],
                         ids=["dropout_eval", "dropout_p0", "alpha_dropout_eval"])
def test_complex_dropout_identity_passes(f):
    for L in (torch, sf):
        np.testing.assert_array_equal(f(L, L.tensor(Z)).numpy(), Z)


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize_complex_like_torch(p, dim):
    out = {}
    for L in (sf, torch):
        z = L.tensor(Z, requires_grad=True)
        y = L.nn.functional.normalize(z, p=p, dim=dim)
        L.view_as_real(y).pow(2).mul(L.arange(16.0).view(2, 4, 2)).sum().backward()
        out[L.__name__] = (y.detach().numpy(), z.grad.numpy())
    for a, b in zip(out["shardflow"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_rms_norm_complex_like_torch():
    """torch computes complex rms_norm with the complex square ``x**2`` (shardflow raised
    TypeError)."""
    rng = np.random.default_rng(1)
    z = (rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))).astype(np.complex64)
    w = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    out = {}
    for L in (sf, torch):
        x, wt = L.tensor(z, requires_grad=True), L.tensor(w, requires_grad=True)
        y = L.nn.functional.rms_norm(x, (3, 4), wt)
        L.view_as_real(y).mul(L.arange(48.0).view(2, 3, 4, 2)).sum().backward()
        out[L.__name__] = (y.detach().numpy(), x.grad.numpy(), wt.grad.numpy())
    for a, b in zip(out["shardflow"], out["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(b).max())
