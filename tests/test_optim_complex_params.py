"""Complex parameters in the optimizers, against torch: every elementwise optimizer steps a
complex parameter as torch does, through ``view_as_real`` (its real and imaginary parts are
independent entries: ``exp_avg_sq`` holds ``re(g)^2`` and ``im(g)^2``); Rprop's step sizes
start at ``lr`` on both parts; LBFGS flattens complex parameters as real pairs; Adafactor and
Muon refuse complex parameters with torch's message before any update. Before session 37
sf's adaptive optimizers squared the complex gradient (``g * g``), a silent wrong step."""

import numpy as np
import pytest
import torch

import shardflow as sf

CONFIGS = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, amsgrad=True, maximize=False, weight_decay=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("RMSprop", dict(lr=0.01)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)),
    ("Adadelta", dict(lr=1.0)),
    ("Adamax", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=2)),
    ("Rprop", dict(lr=0.01)),
    ("LBFGS", dict(lr=0.1)),
]


def _run(lib, name, kw, steps=8):
    rng = np.random.default_rng(0)
    p0 = (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(np.complex64)
    target = (rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))).astype(np.complex64)
    p = lib.nn.Parameter(lib.tensor(p0))
    opt = getattr(lib.optim, name)([p], **kw)

    def closure():
        opt.zero_grad()
        # the real and imaginary parts enter differently: a |g|^2 state would not match
        loss = ((p - lib.tensor(target)).abs() ** 2).sum() + 0.3 * (p.real * p.imag).sum()
        loss.backward()
        return loss

    for _ in range(1 if name == "LBFGS" else steps):  # LBFGS: 20 iterations per step, near
        opt.step(closure)                             # convergence its direction is all rounding
    state = {k: np.asarray(v.detach().resolve_conj().numpy()) for k, v in opt.state[p].items()
             if isinstance(v, lib.Tensor) and v.ndim > 0}
    return np.asarray(p.detach().resolve_conj().numpy()), state


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
def test_complex_parameter_steps_like_torch(name, kw):
    p_sf, st_sf = _run(sf, name, kw)
    p_th, st_th = _run(torch, name, kw)
    np.testing.assert_allclose(p_sf, p_th, rtol=1e-4, atol=1e-5)
    assert sorted(st_sf) == sorted(st_th)
    for k in st_th:
        assert st_sf[k].dtype == st_th[k].dtype, (k, st_sf[k].dtype, st_th[k].dtype)
        np.testing.assert_allclose(st_sf[k], st_th[k], rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_optimizers_without_complex_support_refuse_before_any_update(name):
    for lib in (torch, sf):
        real = lib.nn.Parameter(lib.ones(2, 2))
        cplx = lib.nn.Parameter(lib.zeros(2, 2, dtype=lib.complex64))
        opt = getattr(lib.optim, name)([real, cplx], lr=0.1)
        real.grad, cplx.grad = lib.ones(2, 2), lib.ones(2, 2, dtype=lib.complex64)
        with pytest.raises(RuntimeError, match=f"{name} does not support complex parameters"):
            opt.step()
        assert float(real.detach().sum()) == 4.0  # nothing stepped


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_refuses_complex_parameters_like_torch(name):
    for lib in (torch, sf):
        p = lib.nn.Parameter(lib.zeros(2, dtype=lib.complex64))
        opt = getattr(lib.optim, name)([p], lr=0.1, fused=True)
        p.grad = lib.ones(2, dtype=lib.complex64)
        with pytest.raises(RuntimeError, match="`fused=True` requires all the params to be floating point"):
            opt.step()
        assert float(p.detach().abs().sum()) == 0.0
