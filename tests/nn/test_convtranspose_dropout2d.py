"""ConvTranspose2d as DCGAN generators use it, and Dropout2d's rank rules, against torch."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn

# (args, kwargs, input shape): DCGAN's first layer (1x1 noise -> 4x4), its stride-2 doubling
# layers (bias=False), output_padding, groups + dilation, non-square kernels.
CT_CASES = [
    ((16, 8, 4, 1, 0), dict(bias=False), (2, 16, 1, 1)),
    ((8, 4, 4, 2, 1), dict(bias=False), (2, 8, 4, 4)),
    ((4, 3, 3, 2, 1), dict(output_padding=1), (2, 4, 5, 5)),
    ((4, 6, 3, 2, 1), dict(output_padding=1, groups=2, dilation=2), (2, 4, 3, 3)),
    ((4, 3, (3, 2), (2, 1), (1, 0)), {}, (2, 4, 3, 5)),
    ((4, 3, 3, 2, 1), {}, (4, 5, 5)),  # unbatched
]


def _pair(args, kw):
    th = torch.nn.ConvTranspose2d(*args, **kw).double()
    m = nn.ConvTranspose2d(*args, **kw).double()
    m.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in th.state_dict().items()})
    return th, m


@pytest.mark.parametrize("args,kw,shape", CT_CASES)
def test_conv_transpose2d_forward_and_backward_match_torch(args, kw, shape):
    th, m = _pair(args, kw)
    x = np.random.default_rng(0).standard_normal(shape)
    tx, sx = torch.tensor(x, requires_grad=True), sf.tensor(x, requires_grad=True)
    ty, sy = th(tx), m(sx)
    assert tuple(sy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(sy.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    sy.backward(sf.tensor(g))
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.weight.grad.numpy(), th.weight.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("output_size", [(10, 10), (9, 10), [2, 3, 10, 9]])
def test_conv_transpose2d_output_size_picks_output_padding_like_torch(output_size):
    th, m = _pair((4, 3, 3, 2, 1), {})
    x = np.random.default_rng(2).standard_normal((2, 4, 5, 5))
    ty = th(torch.tensor(x), output_size=output_size)
    sy = m(sf.tensor(x), output_size=output_size)
    assert tuple(sy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_conv_transpose2d_output_size_out_of_range_raises_with_the_valid_range():
    m = nn.ConvTranspose2d(4, 3, 3, 2, 1)
    with pytest.raises(ValueError, match=r"valid sizes range from \[9, 9\] to \[10, 10\]"):
        m(sf.zeros(2, 4, 5, 5), output_size=(11, 9))
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        m(sf.zeros(2, 4, 5, 5), output_size=(9,))


def _keep_pattern(y):
    return (y != 0).astype(np.int8)


def test_dropout2d_on_2d_input_warns_and_drops_elements_like_torch():
    x = np.ones((64, 32), np.float32)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        torch.nn.Dropout2d(0.5)(torch.tensor(x))  # the reference: warns, then runs
    sf.manual_seed(0)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        y = nn.Dropout2d(0.5)(sf.tensor(x)).numpy()
    # (N, C) input: one draw per element, survivors scaled by 1 / (1 - p)
    assert set(np.unique(y)) == {0.0, 2.0}
    assert 0.4 < (y == 0).mean() < 0.6
    rows_constant = (y.min(axis=1) == y.max(axis=1)).mean()
    assert rows_constant < 0.1  # not whole rows: element-wise, as torch's feature_dropout


def test_dropout2d_eval_mode_still_warns_on_2d_input_and_is_identity():
    m = nn.Dropout2d(0.5).eval()
    x = sf.ones(3, 4)
    with pytest.warns(UserWarning, match="Received a 2-D input"):
        assert m(x) is x


def test_dropout2d_keeps_4d_and_3d_channelwise_without_rank_warning():
    sf.manual_seed(1)
    x = sf.ones(4, 8, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = nn.Dropout2d(0.5)(x).numpy().reshape(4, 8, 9)
    assert (y.min(axis=2) == y.max(axis=2)).all()
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y3 = nn.Dropout2d(0.5)(sf.ones(4, 8, 5)).numpy()
    assert (y3.min(axis=2) == y3.max(axis=2)).all()


def test_dropout2d_on_1d_input_raises_like_torch():
    for lib in (torch, sf):
        with pytest.warns(UserWarning, match="Received a 1-D input"), \
                pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            lib.nn.functional.dropout2d(lib.ones(5))


def test_dropout3d_on_odd_rank_treats_dim0_as_channel_like_torch():
    sf.manual_seed(2)
    with pytest.warns(UserWarning, match="Received a 3-D input to dropout3d"):
        y = sf.nn.functional.dropout3d(sf.ones(16, 4, 5), 0.5).numpy().reshape(16, 20)
    assert (y.min(axis=1) == y.max(axis=1)).all()
    assert 0 < (y[:, 0] == 0).sum() < 16
