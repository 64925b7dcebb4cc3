"""Channels-last layout as torch's (``backend/memory_format.py``): ``stride()`` and
``is_contiguous(memory_format=...)`` after ``to`` / ``contiguous`` / ``clone`` / ``empty`` /
the ``*_like`` factories / pointwise ops / ``conv2d`` / ``Module.to``, with the values and
gradients unchanged. shardflow accepted every ``memory_format`` and kept arrays row-major,
so a program printing strides (the channels-last tutorial) or checking
``is_contiguous(memory_format=torch.channels_last)`` read something else than torch's."""

import numpy as np
import pytest
import torch

import shardflow

LIBS = pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])


def _both(fn):
    """``fn(lib)`` on both libraries; returns (shardflow's, torch's)."""
    return fn(shardflow), fn(torch)


def test_conversions_and_factories_stride_like_torch():
    def strides(lib):
        cl = lib.channels_last
        x = lib.arange(2 * 3 * 4 * 5, dtype=lib.float32).reshape(2, 3, 4, 5)
        y = x.to(memory_format=cl)
        e = lib.empty(2, 3, 4, 5, memory_format=cl)
        special = lib.zeros(4, 1, 4, 4)
        return [y.stride(), y.to(memory_format=lib.contiguous_format).stride(), y.contiguous().stride(),
                x.contiguous(memory_format=cl).stride(), y.clone().stride(),
                y.clone(memory_format=lib.contiguous_format).stride(), x.clone(memory_format=cl).stride(),
                e.stride(), lib.empty_like(e).stride(), lib.zeros_like(y).stride(), lib.ones_like(y).stride(),
                lib.full_like(y, 2.0).stride(), lib.zeros_like(y, memory_format=lib.contiguous_format).stride(),
                lib.empty_like(x, memory_format=cl).stride(), y.double().stride(), (y + y).stride(),
                (y * 2).stride(), lib.relu(y).stride(),
                y.is_contiguous(), y.is_contiguous(memory_format=cl), x.is_contiguous(memory_format=cl),
                special.is_contiguous(memory_format=cl), special.to(memory_format=cl).stride(),
                special.contiguous(memory_format=cl).stride(), y.to(memory_format=cl) is y,
                x.to(memory_format=lib.contiguous_format) is x, y.contiguous(memory_format=cl) is y]

    sf, th = _both(strides)
    assert sf == th
    assert th[0] == (60, 1, 15, 3)


def test_values_and_gradients_unchanged():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)

    def run(lib):
        t = lib.tensor(x, requires_grad=True)
        y = t.to(memory_format=lib.channels_last)
        z = (y * lib.arange(5.0)).contiguous(memory_format=lib.channels_last).clone()
        z.sum().backward()
        return y.detach().numpy().copy(), z.detach().numpy().copy(), t.grad.numpy().copy(), z.stride()

    sf, th = _both(run)
    for a, b in zip(sf[:3], th[:3], strict=True):
        np.testing.assert_array_equal(a, b)
    assert sf[3] == th[3]


def test_conv2d_and_module_to_like_torch():
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)

    def run(lib):
        lib.manual_seed(0)
        conv = lib.nn.Conv2d(3, 4, 3)
        plain = conv(lib.tensor(x))
        from_input = conv(lib.tensor(x).to(memory_format=lib.channels_last))
        same = conv.to(memory_format=lib.channels_last)
        from_weight = conv(lib.tensor(x))
        return (plain.stride(), from_input.stride(), from_weight.stride(), conv.weight.stride(), conv.bias.stride(),
                same is conv, from_input.detach().numpy().copy(), plain.detach().numpy().copy(),
                repr(from_input.grad_fn).split()[0])

    sf, th = _both(run)
    assert sf[:6] == th[:6] and sf[8] == th[8]
    assert th[1] == (64, 1, 16, 4) and th[2] == (64, 1, 16, 4)
    np.testing.assert_allclose(sf[6], th[6], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sf[6], sf[7], rtol=0, atol=0)


@LIBS
def test_channels_last_needs_four_dims(lib):
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        lib.zeros(2, 3).to(memory_format=lib.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        lib.nn.Conv3d(2, 2, 2).to(memory_format=lib.channels_last)
    with pytest.raises(TypeError):
        lib.zeros(1, 2, 3, 4).to(memory_format="channels_last")


def test_channels_last_network_gradients_like_torch():
    """A channels-last conv (input and weight) through batch norm, ReLU and max pooling:
    values and gradients are torch's whatever the layouts in between."""
    x = np.random.default_rng(2).standard_normal((2, 3, 6, 6)).astype(np.float32)

    def run(lib):
        lib.manual_seed(0)
        conv = lib.nn.Conv2d(3, 4, 3).to(memory_format=lib.channels_last)
        t = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_pool2d(lib.relu(lib.nn.BatchNorm2d(4)(conv(t.to(memory_format=lib.channels_last)))), 2)
        (y * y).sum().backward()
        return y.detach().numpy().copy(), t.grad.numpy().copy(), conv.weight.grad.numpy().copy()

    for a, b in zip(*_both(run), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_random_like_with_a_format_draws_as_torch():
    """``rand_like`` / ``randn_like`` honour ``memory_format``: a channels-last result is
    filled in memory order (torch's ``empty_like(..., memory_format)`` then a fill), so from
    the same seed the values and strides are torch's; an explicit ``contiguous_format`` of a
    channels-last input gives a row-major result (the format was ignored before)."""

    def draws(lib):
        lib.manual_seed(0)
        cl, plain = lib.empty(2, 3, 4, 4, memory_format=lib.channels_last), lib.empty(2, 3, 4, 4)
        out = [lib.randn_like(cl), lib.randn_like(cl, memory_format=lib.contiguous_format),
               lib.rand_like(cl, memory_format=lib.contiguous_format),
               lib.randn_like(plain, memory_format=lib.channels_last),
               lib.rand_like(plain, memory_format=lib.channels_last)]
        return [(t.stride(), t.numpy().copy()) for t in out]

    for (sf_stride, sf_values), (th_stride, th_values) in zip(*_both(draws), strict=True):
        assert sf_stride == th_stride
        np.testing.assert_allclose(sf_values, th_values, rtol=1e-6, atol=1e-6)
