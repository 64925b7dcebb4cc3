"""The vectorisable float32 math of ``shardflow/kernels/_math.py`` (run here as plain Python,
the same source numba compiles) against float64 references over their whole ranges."""

import math

import numpy as np

from shardflow.kernels._math import erf32, exp_le0, exp_neg, tanh32


def test_tanh32_and_erf32_within_a_few_float32_ulp():
    x = np.concatenate([np.linspace(-12, 12, 4001), [0.0, -0.0, 1e-30, -1e-8, 50.0, -50.0]])
    assert max(abs(tanh32(v) - math.tanh(v)) for v in x) < 4e-7
    assert max(abs(erf32(v) - math.erf(v)) for v in x) < 4e-7
    assert abs(tanh32(50.0) - 1.0) < 4e-7 and abs(erf32(-50.0) + 1.0) < 4e-7  # 1.0 in float32


def test_exp_neg_half_an_ulp_and_its_edges():
    y = -np.concatenate([np.linspace(0, 87, 3001), np.geomspace(1e-12, 1, 200)])
    rel = [abs(exp_neg(v) - math.exp(v)) / math.exp(v) for v in y]
    assert max(rel) < 1.2e-7  # float32's ulp is 1.19e-7 relative
    assert exp_neg(0.0) == 1.0
    assert exp_neg(-105.0) == 0.0 and exp_neg(-math.inf) == 0.0
    assert math.isnan(exp_neg(math.nan))
    assert exp_le0(-3.0, True) == math.exp(-3.0)
