"""Pooling, normalisation and PReLU layers refuse complex inputs with torch's
``NotImplementedError`` and kernel name: max pooling crashed inside NumPy with a ValueError
("Invalid integer data type 'c'"), average pooling and the norms raised RuntimeError or
TypeError, PReLU computed with NumPy's lexicographic order."""

import numpy as np
import pytest
import torch

import shardflow as sf

_RNG = np.random.default_rng(0)
Z = (_RNG.standard_normal((1, 2, 4, 4)) + 1j * _RNG.standard_normal((1, 2, 4, 4))).astype(np.complex64)

CASES = {
    "max_pool1d": (lambda F, z: F.max_pool1d(z[0], 2), "max_pool1d_impl"),
    "max_pool2d": (lambda F, z: F.max_pool2d(z, 2), "max_pool2d"),
    "avg_pool1d": (lambda F, z: F.avg_pool1d(z[0], 2), "avg_pool2d"),
    "avg_pool2d": (lambda F, z: F.avg_pool2d(z, 2), "avg_pool2d"),
    "adaptive_avg_pool1d": (lambda F, z: F.adaptive_avg_pool1d(z[0], 2), "adaptive_avg_pool2d"),
    "adaptive_max_pool2d": (lambda F, z: F.adaptive_max_pool2d(z, 2), "adaptive_max_pool2d"),
    "layer_norm": (lambda F, z: F.layer_norm(z, (4,)), "LayerNormKernelImpl"),
    "group_norm": (lambda F, z: F.group_norm(z, 1), "GroupNormKernelImpl"),
    "batch_norm": (lambda F, z: F.batch_norm(z, None, None, training=True), "batch_norm"),
    "instance_norm": (lambda F, z: F.instance_norm(z), "batch_norm"),
    "prelu": (lambda F, z: F.prelu(z, z.new_ones(1)), "prelu_cpu"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_input_refused_like_torch(name):
    f, kernel = CASES[name]
    for L in (torch, sf):
        with pytest.raises(NotImplementedError) as info:
            f(L.nn.functional, L.tensor(Z))
        assert str(info.value) == f"\"{kernel}\" not implemented for 'ComplexFloat'", (
            L.__name__, str(info.value))
