"""Complex-valued models trained end to end against torch from the same seed: losses every
step and the parameters after it, rtol 1e-5. The models: a Fourier Neural Operator block
(after neuraloperator's ``SpectralConv2d``, MIT licence: ``rfft2`` -> complex ``einsum`` over
the kept modes with ``scale * rand(..., cfloat)`` weights -> ``irfft2``), two complex
``nn.Linear`` layers, complex ``nn.Conv1d`` layers with a ``view_as_real`` loss, and a complex
RNN cell written by hand with a ``linalg.norm`` + ``angle`` loss. Optimizers: SGD (momentum,
nesterov, weight decay), Adam/AdamW (amsgrad), RMSprop (momentum, centered), Adagrad
(``initial_accumulator_value``: torch starts both parts' accumulators at it, shardflow started
the imaginary one at 0)."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _fno(L):
    nn = L.nn

    class SpectralConv2d(nn.Module):
        def __init__(self, cin, cout, m1, m2):
            super().__init__()
            self.cout, self.m1, self.m2 = cout, m1, m2
            scale = 1 / (cin * cout)
            self.weights1 = nn.Parameter(scale * L.rand(cin, cout, m1, m2, dtype=L.cfloat))
            self.weights2 = nn.Parameter(scale * L.rand(cin, cout, m1, m2, dtype=L.cfloat))

        def forward(self, x):
            b, m1, m2 = x.shape[0], self.m1, self.m2
            x_ft = L.fft.rfft2(x)
            out_ft = L.zeros(b, self.cout, x.size(-2), x.size(-1) // 2 + 1, dtype=L.cfloat)
            out_ft[:, :, :m1, :m2] = L.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2], self.weights1)
            out_ft[:, :, -m1:, :m2] = L.einsum("bixy,ioxy->boxy", x_ft[:, :, -m1:, :m2], self.weights2)
            return L.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))

    class FNOBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc0, self.conv, self.w, self.fc1 = (nn.Linear(3, 4), SpectralConv2d(4, 4, 3, 3),
                                                     nn.Conv2d(4, 4, 1), nn.Linear(4, 1))

        def forward(self, x):
            x = self.fc0(x).permute(0, 3, 1, 2)
            x = nn.functional.gelu(self.conv(x) + self.w(x))
            return self.fc1(x.permute(0, 2, 3, 1))

    return FNOBlock()


def _cell(L):
    class ComplexRNNCell(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.wx = L.nn.Parameter(0.3 * L.randn(3, 4, dtype=L.cfloat))
            self.wh = L.nn.Parameter(0.3 * L.randn(4, 4, dtype=L.cfloat))
            self.b = L.nn.Parameter(L.zeros(4, dtype=L.cfloat))

        def forward(self, x):
            h = L.zeros(x.shape[1], 4, dtype=L.cfloat)
            for t in range(x.shape[0]):
                z = x[t] @ self.wx + h @ self.wh + self.b
                h = L.tanh(z.real) + 1j * L.tanh(z.imag)  # split activation
            return h

    return ComplexRNNCell()


def _cplx(rng, *shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def _setup(L, kind):
    """(model, input, loss function) for ``kind``, built from the seed."""
    L.manual_seed(0)
    rng = np.random.default_rng(0)
    if kind == "fno":
        x, y = rng.standard_normal((2, 8, 8, 3)), rng.standard_normal((2, 8, 8, 1))
        y = L.tensor(y.astype(np.float32))
        return _fno(L), x.astype(np.float32), lambda out: ((out - y) ** 2).mean()
    if kind == "linear":
        x, y = _cplx(rng, 6, 4), L.tensor(_cplx(rng, 6, 3))
        model = L.nn.Sequential(L.nn.Linear(4, 5, dtype=L.cfloat), L.nn.Linear(5, 3, dtype=L.cfloat))
        return model, x, lambda out: ((out - y).abs() ** 2).mean()
    if kind == "conv1d":
        model = L.nn.Sequential(L.nn.Conv1d(2, 3, 3, padding=1, dtype=L.cfloat),
                                L.nn.Conv1d(3, 1, 3, stride=2, dtype=L.cfloat))
        return model, _cplx(rng, 2, 2, 9), lambda out: (
            L.view_as_real(out).pow(2).mean() + out.real.mean() - out.imag.abs().mean())
    assert kind == "rnn"
    return _cell(L), _cplx(rng, 5, 2, 3), lambda out: L.linalg.norm(out) + 0.1 * L.angle(out).sum()


def _train(L, kind, name, kw, steps=3):
    model, x, loss_fn = _setup(L, kind)
    first = [p.detach().numpy().copy() for p in model.parameters()]
    opt = getattr(L.optim, name)(model.parameters(), **kw)
    x, losses = L.tensor(x), []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return first, losses, [p.detach().numpy() for p in model.parameters()]


OPTIMIZERS = [
    ("SGD", dict(lr=0.02, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.3, centered=True)),
    ("Adagrad", dict(lr=0.05, initial_accumulator_value=0.1, lr_decay=0.01)),
]


@pytest.mark.parametrize("kind", ["fno", "linear", "conv1d", "rnn"])
@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
def test_complex_model_trains_like_torch(kind, name, kw):
    first_s, losses_s, params_s = _train(sf, kind, name, kw)
    first_t, losses_t, params_t = _train(torch, kind, name, kw)
    for a, b in zip(first_s, first_t):  # the same seed draws the same complex weights
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(losses_s, losses_t, rtol=1e-5, atol=1e-6)  # (a loss near 0: ulps)
    for a, b in zip(params_s, params_t):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_adagrad_initial_accumulator_of_complex_parameter():
    states = []
    for L in (sf, torch):
        p = L.nn.Parameter(L.zeros(2, dtype=L.cfloat))
        opt = L.optim.Adagrad([p], lr=0.1, initial_accumulator_value=0.1)
        states.append(opt.state[p]["sum"].numpy().copy())
        p.grad = L.tensor(np.array([1 + 2j, 3 - 1j], np.complex64))
        opt.step()
        states.append(p.detach().numpy())
    np.testing.assert_array_equal(states[0], states[2])
    np.testing.assert_allclose(states[1], states[3], rtol=1e-6)
