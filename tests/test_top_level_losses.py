"""torch's top-level losses (aten signatures, integer reduction codes) against torch 2.13:
values for every code and gradients."""

import numpy as np
import pytest
import torch

import shardflow as sf

rng = np.random.default_rng(0)
A, B, C = (rng.standard_normal((3, 4)) for _ in range(3))
Y = np.array([1.0, -1.0, 1.0])
SIGN = np.sign(B)


def _inputs(lib):
    return [lib.tensor(v, requires_grad=True) for v in (A, B, C)]


CASES = {
    "cosine_embedding_loss": lambda lib, a, b, c, r: lib.cosine_embedding_loss(a, b, lib.tensor(Y), 0.1, r),
    "hinge_embedding_loss": lambda lib, a, b, c, r: lib.hinge_embedding_loss(a, lib.tensor(SIGN), 0.5, r),
    "margin_ranking_loss": lambda lib, a, b, c, r: lib.margin_ranking_loss(a[:, 0], b[:, 0], lib.tensor(Y), 0.2, r),
    "poisson_nll_loss": lambda lib, a, b, c, r: lib.poisson_nll_loss(a, lib.tensor(np.abs(B) * 3), True, True, 1e-8, r),
    "triplet_margin_loss": lambda lib, a, b, c, r: lib.triplet_margin_loss(a, b, c, 1.0, 2.0, 1e-6, True, r),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("reduction", [0, 1, 2, 7])
def test_values_and_gradients_match_torch(name, reduction):
    s, t = _inputs(sf), _inputs(torch)
    out_s, out_t = CASES[name](sf, *s, reduction), CASES[name](torch, *t, reduction)
    np.testing.assert_allclose(out_s.detach().numpy(), out_t.detach().numpy(), rtol=1e-6, atol=1e-9)
    out_s.sum().backward()
    out_t.sum().backward()
    for xs, xt in zip(s, t, strict=True):
        if xt.grad is None:
            assert xs.grad is None or not np.any(xs.grad.numpy())
        else:
            np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_defaults_and_a_string_reduction_is_refused_like_torch():
    s, t = _inputs(sf), _inputs(torch)
    # torch 2.13's binding leaves the loss unreduced when `reduction` is omitted
    for name, args in (("cosine_embedding_loss", (0, 1, Y)), ("hinge_embedding_loss", (0, SIGN)),
                       ("triplet_margin_loss", (0, 1, 2))):
        def call(lib, x, args=args, name=name):
            return getattr(lib, name)(*(x[a] if isinstance(a, int) else lib.tensor(a) for a in args))
        np.testing.assert_allclose(call(sf, s).detach().numpy(), call(torch, t).detach().numpy(), rtol=1e-6)
    for lib, x in ((sf, s), (torch, t)):
        with pytest.raises(TypeError, match=r"argument 'reduction' \(position 5\) must be int, not str"):
            lib.cosine_embedding_loss(x[0], x[1], lib.tensor(Y), 0.1, "mean")
        with pytest.raises(TypeError):
            lib.poisson_nll_loss(x[0], x[1])
