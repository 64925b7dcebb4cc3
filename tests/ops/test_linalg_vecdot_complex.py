"""``linalg.vecdot`` conjugates its first argument for complex inputs (torch's definition,
``sum(conj(x) * y, dim)``); it computed ``sum(x * y)`` before session 37, a silent wrong value.
Forward and backward against torch."""

import numpy as np
import torch

import shardflow as sf


def test_complex_vecdot_conjugates_x_like_torch():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    y = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    g = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    outs = {}
    for lib in (torch, sf):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = lib.linalg.vecdot(a, b, dim=0)
        out.backward(lib.tensor(g))
        outs[lib] = [np.asarray(t.detach().resolve_conj().numpy()) for t in (out, a.grad, b.grad)]
    for s, t, what in zip(outs[sf], outs[torch], ("value", "grad x", "grad y"), strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-5, err_msg=what)


def test_real_vecdot_unchanged():
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    assert np.allclose(sf.linalg.vecdot(sf.tensor(a), sf.tensor(b)).numpy(),
                       torch.linalg.vecdot(torch.tensor(a), torch.tensor(b)).numpy())
