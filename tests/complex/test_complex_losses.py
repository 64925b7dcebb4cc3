"""Losses of complex tensors, against torch (values and gradients): ``l1_loss`` is the mean
modulus ``|input - target|`` (session 37 took ``|.|`` of the real part only); weighted
``mse_loss`` is torch's Python ``d**2 * weight``; ``mse_loss``/``smooth_l1_loss``/
``huber_loss`` refuse complex with torch's ``NotImplementedError`` (shardflow computed them);
``torch.dist`` takes the moduli (shardflow raised); ``cdist`` and ``cosine_similarity`` refuse
complex with torch's ``RuntimeError`` (shardflow computed them); ``lerp``'s gradients carry
the conjugates (shardflow's had none). Also checked, already right: ``.abs()``, ``view_as_real``,
``linalg.norm`` (vector, 'fro', 1, inf), ``.real``/``.imag``, ``angle``, ``polar``,
``torch.complex``."""

import math

import numpy as np
import pytest
import torch

import shardflow as sf

_RNG = np.random.default_rng(0)
Z = (_RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))).astype(np.complex64)
W = (_RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))).astype(np.complex64)
R = _RNG.standard_normal((3, 4)).astype(np.float32)

LOSSES = {
    "l1": lambda L, x, y: L.nn.functional.l1_loss(x, y),
    "l1_sum": lambda L, x, y: L.nn.functional.l1_loss(x, y, reduction="sum"),
    "l1_none": lambda L, x, y: (L.nn.functional.l1_loss(x, y, reduction="none") * L.tensor(R)).sum(),
    "l1_weight": lambda L, x, y: L.nn.functional.l1_loss(x, y, weight=L.tensor(R)),
    "l1_real_target": lambda L, x, y: L.nn.L1Loss()(x, y.real),
    "mse_weight": lambda L, x, y: L.view_as_real(
        L.nn.functional.mse_loss(x, y, weight=L.tensor(R))).sum(),
    "dist2": lambda L, x, y: L.dist(x, y),
    "dist1": lambda L, x, y: L.dist(x, y, 1),
    "dist_inf": lambda L, x, y: L.dist(x, y, math.inf),
    "dist3": lambda L, x, y: L.dist(x, y, 3),
    "lerp_scalar": lambda L, x, y: L.view_as_real(L.lerp(x, y, 0.3)).sum(),
    "lerp_complex_scalar": lambda L, x, y: L.view_as_real(L.lerp(x, y, 0.3 + 0.2j)).sum(),
    "lerp_tensor": lambda L, x, y: L.view_as_real(L.lerp(x, y, y * x)).sum(),
    "abs": lambda L, x, y: (x - y).abs().mean(),
    "view_as_real_mse": lambda L, x, y: L.nn.functional.mse_loss(L.view_as_real(x),
                                                                 L.view_as_real(y)),
    "linalg_norm": lambda L, x, y: L.linalg.norm(x - y),
    "linalg_norm_fro": lambda L, x, y: L.linalg.norm(x - y, "fro"),
    "linalg_norm_1": lambda L, x, y: L.linalg.norm(x - y, 1),
    "linalg_norm_inf": lambda L, x, y: L.linalg.norm(x - y, math.inf),
    "linalg_norm_dim": lambda L, x, y: L.linalg.norm(x - y, dim=1).sum(),
    "real_imag": lambda L, x, y: (x.real * y.imag).sum() + (x.imag ** 2).sum(),
    "angle": lambda L, x, y: L.angle(x * y).sum(),
    "polar": lambda L, x, y: L.view_as_real(L.polar(x.abs(), y.angle()) * x).sum(),
    "complex": lambda L, x, y: L.view_as_real(L.complex(x.real, y.imag) * x).sum(),
}


def _run(L, f, create_graph=False):
    x, y = L.tensor(Z, requires_grad=True), L.tensor(W, requires_grad=True)
    loss = f(L, x, y)
    gx, gy = L.autograd.grad(loss, (x, y), create_graph=create_graph)
    return loss, gx, gy, x, y


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_complex_loss_and_gradients_like_torch(name):
    ls, gxs, gys, _, _ = _run(sf, LOSSES[name])
    lt, gxt, gyt, _, _ = _run(torch, LOSSES[name])
    assert str(ls.dtype).split(".")[-1] == str(lt.dtype).split(".")[-1]
    np.testing.assert_allclose(ls.detach().numpy(), lt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gxs.numpy(), gxt.resolve_conj().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gys.numpy(), gyt.resolve_conj().numpy(), rtol=1e-5, atol=1e-6)


def test_lerp_complex_second_order_like_torch():
    """The double-backward graph of lerp conjugates as the first-order one."""
    out = {}
    for L in (sf, torch):
        _, gx, gy, x, y = _run(L, LOSSES["lerp_tensor"], create_graph=True)
        (h,) = L.autograd.grad((gx.abs() ** 2).sum() + L.view_as_real(gy).sum(), (x,))
        out[L.__name__] = h.resolve_conj().numpy()
    np.testing.assert_allclose(out["shardflow"], out["torch"], rtol=1e-4, atol=1e-5)


REFUSED = {
    "mse": (lambda L, x, y: L.nn.functional.mse_loss(x, y), NotImplementedError,
            "\"mse_cpu\" not implemented for 'ComplexFloat'"),
    "mse_module_real_target": (lambda L, x, y: L.nn.MSELoss()(x, y.real), NotImplementedError,
                               "\"mse_cpu\" not implemented for 'ComplexFloat'"),
    "smooth_l1": (lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y), NotImplementedError,
                  "\"smooth_l1_cpu\" not implemented for 'ComplexFloat'"),
    "huber": (lambda L, x, y: L.nn.functional.huber_loss(x, y), NotImplementedError,
              "\"huber_cpu\" not implemented for 'ComplexFloat'"),
    "cdist_x1": (lambda L, x, y: L.cdist(x, y.real), RuntimeError,
                 "cdist only supports floating-point dtypes, X1 got: ComplexFloat"),
    "cdist_x2": (lambda L, x, y: L.cdist(x.real, y), RuntimeError,
                 "cdist only supports floating-point dtypes, X2 got: ComplexFloat"),
    "cosine_similarity": (lambda L, x, y: L.nn.functional.cosine_similarity(x, y),
                          RuntimeError,
                          "expected common dtype to be floating point, yet common dtype is "
                          "ComplexFloat"),
    "cosine_similarity_int": (lambda L, x, y: L.nn.CosineSimilarity()(
        L.arange(4).view(1, 4), L.arange(4).view(1, 4)), RuntimeError,
        "expected common dtype to be floating point, yet common dtype is Long"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_complex_refused_like_torch(name):
    f, exc, msg = REFUSED[name]
    for L in (torch, sf):
        with pytest.raises(exc) as info:
            f(L, L.tensor(Z), L.tensor(W))
        assert msg in str(info.value), (L.__name__, str(info.value))
