"""``atan2``'s gradient where ``y^2 + x^2`` is 0 (the origin, or an underflow) is 0 in torch
(its backward zeroes the reciprocal there); shardflow's was nan, which made the phase
``atan2(spec.imag, spec.real)`` of a silent STFT bin poison a whole training step (session
40, compat-audio)."""

import numpy as np
import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_first_order_like_torch(dtype):
    y0 = np.array([0.0, 1e-30, 1e-20, 1e-19, -0.0, 2.0, 0.0], dtype)
    x0 = np.array([0.0, 1e-30, 1e-20, 1e-19, 0.0, -1.0, -3.0], dtype)
    got = {}
    for lib in (torch, sf):
        y = lib.tensor(y0, requires_grad=True)
        x = lib.tensor(x0, requires_grad=True)
        (lib.atan2(y, x) * lib.tensor(np.arange(1, 8, dtype=dtype))).sum().backward()
        got[lib] = (y.grad.numpy(), x.grad.numpy())
    for a, b in zip(got[sf], got[torch], strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    assert got[torch][0][0] == 0 and not np.isnan(got[torch][0]).any()


def test_second_order_at_the_origin_like_torch():
    got = {}
    for lib in (torch, sf):
        y = lib.tensor([0.0, 0.5], dtype=lib.float64, requires_grad=True)
        x = lib.tensor([0.0, -2.0], dtype=lib.float64, requires_grad=True)
        gy, gx = lib.autograd.grad(lib.atan2(y, x).sum(), (y, x), create_graph=True)
        (gy * 3 + gx).sum().backward()
        got[lib] = [t.detach().numpy() for t in (gy, gx, y.grad, x.grad)]
    for a, b in zip(got[sf], got[torch], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-14)  # nan where torch has nan (y.grad, x.grad at 0)


def test_phase_of_a_silent_bin_trains():
    """The program pattern: a magnitude/phase loss of an STFT whose input is 0 at the start."""
    sig = np.zeros(64)
    sig[32:] = np.sin(np.arange(32) * 0.7)
    got = {}
    for lib in (torch, sf):
        x = lib.tensor(sig, requires_grad=True)
        spec = lib.stft(x, 16, hop_length=4, window=lib.hann_window(16, dtype=lib.float64), return_complex=True)
        phase = lib.atan2(spec.imag, spec.real)
        (phase.sin() * spec.abs()).sum().backward()
        got[lib] = x.grad.numpy()
    assert not np.isnan(got[torch]).any()
    np.testing.assert_allclose(got[sf], got[torch], rtol=1e-9, atol=1e-12)
