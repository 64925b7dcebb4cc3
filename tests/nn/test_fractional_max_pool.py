"""Fractional max pooling (``nn/functional_fractional.py``, ``nn/modules/fractional_pool.py``)
against torch 2.13: with the same ``_random_samples`` both pick the same windows, so values,
indices and gradients must agree exactly; ties and NaNs follow torch's rule; without samples
the draws come from shardflow's generator; errors carry torch's messages."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import shardflow as sf
import shardflow.nn.functional as SF

RNG = np.random.default_rng(0)

CASES = [  # (nd, input shape, kernel_size, output_size, output_ratio, dtype)
    (2, (2, 3, 11, 13), (2, 3), (5, 6), None, "float32"),
    (2, (3, 9, 8), 2, None, (0.5, 0.5), "float64"),
    (2, (1, 2, 10, 7), 3, 4, None, "float64"),
    (3, (2, 2, 7, 8, 9), (2, 2, 3), (3, 4, 5), None, "float32"),
    (3, (2, 6, 7, 5), 2, None, (0.5, 0.6, 0.7), "float64"),
]


def _pair_of_pools(nd):
    return getattr(TF, f"fractional_max_pool{nd}d"), getattr(SF, f"fractional_max_pool{nd}d")


@pytest.mark.parametrize("case", range(len(CASES)))
def test_values_indices_and_gradients_match_torch(case):
    nd, shape, k, out, ratio, dtype = CASES[case]
    x = RNG.standard_normal(shape).astype(dtype)
    n = shape[0] if len(shape) == nd + 2 else 1
    samples = RNG.random((n, shape[-nd - 1], nd)).astype(dtype)
    tx, sx = torch.tensor(x, requires_grad=True), sf.tensor(x, requires_grad=True)
    t_pool, s_pool = _pair_of_pools(nd)
    t_out, t_idx = t_pool(tx, k, out, ratio, return_indices=True, _random_samples=torch.tensor(samples))
    s_out, s_idx = s_pool(sx, k, out, ratio, return_indices=True, _random_samples=sf.tensor(samples))
    assert tuple(s_out.shape) == tuple(t_out.shape)
    assert s_idx.dtype == sf.int64
    np.testing.assert_array_equal(s_idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(s_out.detach().numpy(), t_out.detach().numpy())
    weights = RNG.standard_normal(tuple(t_out.shape)).astype(dtype)
    (t_out * torch.tensor(weights)).sum().backward()
    (s_out * sf.tensor(weights)).sum().backward()
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), atol=1e-6)


def test_ties_take_the_first_maximum_and_nan_wins_like_torch():
    x = RNG.integers(0, 3, (2, 2, 9, 9)).astype(np.float32)  # many equal values in each window
    x[0, 0, 4, 4] = np.nan
    samples = RNG.random((2, 2, 2)).astype(np.float32)
    t_out, t_idx = TF.fractional_max_pool2d(torch.tensor(x), 3, output_size=4, return_indices=True,
                                            _random_samples=torch.tensor(samples))
    s_out, s_idx = SF.fractional_max_pool2d(sf.tensor(x), 3, output_size=4, return_indices=True,
                                            _random_samples=sf.tensor(samples))
    np.testing.assert_array_equal(s_idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(s_out.numpy(), t_out.numpy())  # NaN positions agree too
    assert np.isnan(s_out.numpy()).any()


def test_modules_match_torch_with_fixed_samples():
    x = RNG.standard_normal((2, 3, 8, 8, 8)).astype(np.float32)
    samples = RNG.random((2, 3, 3)).astype(np.float32)
    t = torch.nn.FractionalMaxPool3d((2, 3, 2), output_ratio=0.5, return_indices=True,
                                     _random_samples=torch.tensor(samples))
    s = sf.nn.FractionalMaxPool3d((2, 3, 2), output_ratio=0.5, return_indices=True,
                                  _random_samples=sf.tensor(samples))
    np.testing.assert_array_equal(s(sf.tensor(x))[1].numpy(), t(torch.tensor(x))[1].numpy())
    assert sorted(s.state_dict()) == sorted(t.state_dict()) == ["_random_samples"]
    assert repr(s) == repr(t) == "FractionalMaxPool3d()"
    t2, s2 = torch.nn.FractionalMaxPool2d(2, output_size=(3, 4)), sf.nn.FractionalMaxPool2d(2, output_size=(3, 4))
    assert s2.kernel_size == t2.kernel_size and s2.output_size == t2.output_size and s2.output_ratio is None
    assert list(s2.state_dict()) == list(t2.state_dict()) == []
    from shardflow.nn.modules import pooling  # torch.nn.modules.pooling's path

    assert pooling.FractionalMaxPool2d is sf.nn.FractionalMaxPool2d
    assert pooling.FractionalMaxPool3d is sf.nn.FractionalMaxPool3d


def test_without_samples_draws_from_the_default_generator():
    x = sf.tensor(RNG.standard_normal((2, 3, 13, 13)).astype(np.float32))  # alpha = 11 / 4, not whole
    sf.manual_seed(5)
    a_out, a_idx = SF.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)
    sf.manual_seed(5)
    b_out, b_idx = SF.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)
    c_idx = SF.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)[1]
    np.testing.assert_array_equal(a_idx.numpy(), b_idx.numpy())
    assert not np.array_equal(a_idx.numpy(), c_idx.numpy())  # a fresh draw picks other windows
    # each value is the input at its index
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, a_idx.numpy().reshape(2, 3, -1), 2).reshape(2, 3, 5, 5),
                                  a_out.numpy())
    pooled = sf.nn.FractionalMaxPool2d(2, output_ratio=0.5)(x)
    assert tuple(pooled.shape) == (2, 3, 6, 6)
    assert tuple(SF.fractional_max_pool2d(x, 2, output_ratio=0.5).shape) == (2, 3, 6, 6)  # one number taken


@pytest.mark.parametrize("call", [
    lambda F, T, x, s: F.fractional_max_pool2d(x, 2),
    lambda F, T, x, s: F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5)),
    lambda F, T, x, s: F.fractional_max_pool2d(x, 5, output_size=(4, 6)),
    lambda F, T, x, s: F.fractional_max_pool2d(x, 2, output_size=(3, 9)),
    lambda F, T, x, s: F.fractional_max_pool3d(x[None], 2, output_size=(1, 3, 8)),  # 3-D bound: out + k - 1 < in
    lambda F, T, x, s: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s(2, 3, 3)),
    lambda F, T, x, s: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s(1, 3, 2)),
    lambda F, T, x, s: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s(2, 2, 2)),
    lambda F, T, x, s: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=s(2, 3, 2).double()),
    lambda F, T, x, s: F.fractional_max_pool2d(x[0, 0], 2, output_size=3),
    lambda F, T, x, s: F.fractional_max_pool3d(x[0], 2, output_size=2),
    lambda F, T, x, s: F.fractional_max_pool3d(x[None].expand(4, 2, 3, 7, 9), 5, output_size=(3, 3, 3)),
    lambda F, T, x, s: T.FractionalMaxPool2d(2),
    lambda F, T, x, s: T.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
    lambda F, T, x, s: T.FractionalMaxPool3d(2, output_ratio=1.5),
])
def test_errors_match_torch(call):
    x = RNG.standard_normal((2, 3, 7, 9)).astype(np.float32)
    with pytest.raises((ValueError, RuntimeError, IndexError)) as want:
        call(TF, torch.nn, torch.tensor(x), lambda *shape: torch.rand(*shape))
    with pytest.raises((ValueError, RuntimeError, IndexError)) as got:
        call(SF, sf.nn, sf.tensor(x), lambda *shape: sf.rand(*shape))
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)
