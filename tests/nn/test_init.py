"""nn.init: distributions checked by their moments/bounds against the formulas (and torch's
fan computation), reproducibility under manual_seed, in-place semantics."""

import math
import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn
from shardflow.nn import init


def _w(*shape):
    return nn.Parameter(sf.zeros(*shape))


def test_fans_match_torch():
    for shape in [(5, 3), (8, 4, 3, 3), (6, 2, 5)]:
        assert init._calculate_fan_in_and_fan_out(_w(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    for nl, p in [("relu", None), ("tanh", None), ("leaky_relu", 0.2), ("selu", None), ("linear", None)]:
        assert init.calculate_gain(nl, p) == pytest.approx(torch.nn.init.calculate_gain(nl, p))


def test_uniform_and_normal_moments():
    w = _w(200, 300)
    out = init.uniform_(w, -2.0, 4.0)
    assert out is w and w.requires_grad and w.grad_fn is None
    a = w.numpy()
    assert a.min() >= -2 and a.max() < 4
    assert a.mean() == pytest.approx(1.0, abs=0.03)
    assert a.std() == pytest.approx(6 / math.sqrt(12), rel=0.02)
    init.normal_(w, 3.0, 0.5)
    assert w.numpy().mean() == pytest.approx(3.0, abs=0.01)
    assert w.numpy().std() == pytest.approx(0.5, rel=0.02)


def test_kaiming_and_xavier_std():
    w = _w(256, 128, 3)
    fan_in, fan_out = 128 * 3, 256 * 3
    init.kaiming_uniform_(w, a=0, nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / fan_in)
    assert np.abs(w.numpy()).max() <= bound
    assert w.numpy().std() == pytest.approx(math.sqrt(2.0 / fan_in), rel=0.03)
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.numpy().std() == pytest.approx(math.sqrt(2.0 / fan_out), rel=0.03)
    init.xavier_uniform_(w, gain=2.0)
    assert w.numpy().std() == pytest.approx(2.0 * math.sqrt(2.0 / (fan_in + fan_out)), rel=0.03)
    init.xavier_normal_(w)
    assert w.numpy().std() == pytest.approx(math.sqrt(2.0 / (fan_in + fan_out)), rel=0.03)


def test_trunc_normal_bounds_and_moments():
    w = _w(100_000)
    init.trunc_normal_(w, mean=1.0, std=2.0, a=-1.0, b=2.0)
    a = w.numpy()
    assert a.min() >= -1.0 and a.max() <= 2.0
    ref = torch.nn.init.trunc_normal_(torch.empty(100_000), mean=1.0, std=2.0, a=-1.0, b=2.0)
    assert a.mean() == pytest.approx(ref.mean().item(), abs=0.02)
    assert a.std() == pytest.approx(ref.std().item(), rel=0.02)


def test_constant_eye_orthogonal_dirac():
    w = _w(3, 5)
    init.constant_(w, 0.3)
    np.testing.assert_allclose(w.numpy(), 0.3)
    init.ones_(w)
    assert w.numpy().sum() == 15
    init.zeros_(w)
    assert w.numpy().sum() == 0
    init.eye_(w)
    np.testing.assert_array_equal(w.numpy(), np.eye(3, 5))
    q = _w(4, 6)
    init.orthogonal_(q, gain=2.0)
    np.testing.assert_allclose(q.numpy() @ q.numpy().T, 4 * np.eye(4), atol=1e-5)
    c = _w(4, 2, 3, 3)
    init.dirac_(c, groups=2)
    t = torch.empty(4, 2, 3, 3)
    torch.nn.init.dirac_(t, groups=2)
    np.testing.assert_array_equal(c.numpy(), t.numpy())


def test_manual_seed_reproduces_and_dtype_kept():
    sf.manual_seed(0)
    a = nn.Linear(4, 3)
    sf.manual_seed(0)
    b = nn.Linear(4, 3)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    np.testing.assert_array_equal(a.bias.numpy(), b.bias.numpy())
    w = nn.Parameter(sf.zeros(3, 3, dtype=sf.float64))
    init.normal_(w)
    assert w.dtype == sf.float64


def test_default_layer_init_bounds():
    lin = nn.Linear(50, 400)
    bound = 1 / math.sqrt(50)
    assert np.abs(lin.weight.numpy()).max() <= bound and np.abs(lin.bias.numpy()).max() <= bound
    assert lin.weight.numpy().std() == pytest.approx(bound / math.sqrt(3), rel=0.05)
    conv = nn.Conv2d(4, 64, 3)
    cb = 1 / math.sqrt(4 * 9)
    assert np.abs(conv.weight.numpy()).max() <= cb and np.abs(conv.bias.numpy()).max() <= cb
    emb = nn.Embedding(1000, 32, padding_idx=3)
    assert emb.weight.numpy().std() == pytest.approx(1.0, rel=0.03)
    assert not emb.weight.numpy()[3].any()
    bn = nn.BatchNorm1d(5)
    assert bn.weight.numpy().tolist() == [1] * 5 and bn.bias.numpy().tolist() == [0] * 5
    assert bn.running_var.numpy().tolist() == [1] * 5 and int(bn.num_batches_tracked) == 0
    mha = nn.MultiheadAttention(8, 2)
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()


def test_trunc_normal_with_a_above_b_raises_like_torch():
    """torch 2.13 reaches ``uniform_(a, b)`` and refuses the empty range (shardflow filled
    the tensor regardless); both warn first that the mean is far from [a, b]."""
    for lib in (torch, sf):
        with pytest.warns(UserWarning, match="mean is more than 2 std from"), \
                pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=-1"):
            lib.nn.init.trunc_normal_(lib.empty(3), std=0.02, a=1.0, b=-1.0)
    t = sf.empty(2)
    init.trunc_normal_(t, mean=0.5, std=1.0, a=0.5, b=0.5)  # a == b: every value is a
    assert t.tolist() == [0.5, 0.5]


def test_kaiming_of_a_zero_element_tensor_warns_as_torch():
    """torch's ``kaiming_uniform_`` / ``kaiming_normal_`` warn at each call on a tensor with a
    0 in its shape (``nn.Linear(8, 0)``, as an ``AdaptiveLogSoftmaxWithLoss`` with a small
    ``in_features`` builds), at the caller's line; shardflow was silent."""


    got = {}
    for lib in (torch, sf):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.Linear(3, 0)
            lib.nn.init.kaiming_uniform_(lib.empty(0, 3))
            lib.nn.init.kaiming_normal_(lib.empty(2, 0))
            lib.nn.init.xavier_uniform_(lib.empty(0, 3))
            lib.manual_seed(0)
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10])
        got[lib] = [(w.category, str(w.message), w.filename.rsplit("/", 1)[-1]) for w in caught]
    assert got[sf] == got[torch]
    assert len(got[torch]) == 5 and got[torch][1][2] == "test_init.py"
