"""Random complex tensors from torch's stream, bit for bit: torch draws a complex tensor as
its ``view_as_real`` (both parts from the stream, interleaved; ``normal_`` with
``std / sqrt(2)`` per part). shardflow drew only the real parts (imaginary parts zero, half
the stream consumed), so ``torch.rand(..., dtype=torch.cfloat)`` FNO weights, complex
``nn.Linear``/``nn.Conv*`` initialisations and every later draw differed from torch's from
the same seed. ``trunc_normal_``, ``orthogonal_`` and ``bernoulli`` refuse complex tensors
with torch's ``NotImplementedError`` (shardflow filled the real parts)."""

import numpy as np
import pytest
import torch

import shardflow as sf

DRAWS = {
    "rand": lambda L: L.rand(3, 7, dtype=L.cfloat),
    "rand_cdouble": lambda L: L.rand(40, dtype=L.cdouble),
    "randn_serial": lambda L: L.randn(7, dtype=L.cfloat),  # 14 parts: torch's serial path
    "randn_vector": lambda L: L.randn(10, 10, dtype=L.cfloat),
    "randn_cdouble": lambda L: L.randn(33, dtype=L.cdouble),
    "normal_": lambda L: L.empty(20, dtype=L.cfloat).normal_(1, 2),
    "uniform_": lambda L: L.empty(20, dtype=L.cfloat).uniform_(-2, 3),
    "rand_like": lambda L: L.rand_like(L.zeros(4, 5, dtype=L.cfloat)),
    "randn_like_transposed": lambda L: L.randn_like(L.zeros(5, 4, dtype=L.cfloat).T),
    "linear_weight": lambda L: L.nn.Linear(5, 3, dtype=L.cfloat).weight,
    "conv1d_bias": lambda L: L.nn.Conv1d(2, 3, 3, dtype=L.cfloat).bias,
    "xavier_normal_": lambda L: L.nn.init.xavier_normal_(L.empty(4, 6, dtype=L.cfloat)),
    "fno_weights": lambda L: 0.1 * L.rand(2, 2, 3, 3, dtype=L.cfloat),
    "stream_after": lambda L: (L.randn(3, dtype=L.cfloat), L.rand(4))[1],
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_complex_draws_match_torch_bit_for_bit(name):
    out = []
    for L in (torch, sf):
        L.manual_seed(0)
        out.append(DRAWS[name](L).detach().numpy())
    assert out[0].dtype == out[1].dtype
    np.testing.assert_array_equal(out[1], out[0])


REFUSED = {
    "trunc_normal_": (lambda L: L.nn.init.trunc_normal_(L.empty(4, 6, dtype=L.cfloat)),
                      "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    "orthogonal_": (lambda L: L.nn.init.orthogonal_(L.empty(4, 6, dtype=L.cfloat)),
                    "torch.sign is not intended to support complex numbers"),
    "bernoulli_scalar": (lambda L: L.empty(5, dtype=L.cfloat).bernoulli_(0.5),
                         "\"bernoulli_scalar_cpu_\" not implemented for 'ComplexFloat'"),
    "bernoulli_tensor": (lambda L: L.bernoulli(L.full((5,), 0.5, dtype=L.cdouble)),
                         "\"bernoulli_tensor_cpu_self_\" not implemented for 'ComplexDouble'"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_complex_fills_refused_like_torch(name):
    f, msg = REFUSED[name]
    for L in (torch, sf):
        with pytest.raises(NotImplementedError, match=msg):
            f(L)
