"""``torch.dist`` is one ``DistBackward0`` node in torch (the parametrizations tutorial prints
``torch.dist(...)`` results, ``grad_fn=<DistBackward0>``); shardflow's Dist node computes
the same values and first and second derivatives."""

import numpy as np
import pytest
import torch

import shardflow as sf


@pytest.mark.parametrize("p", [2, 1, 3, float("inf")])
def test_dist_values_grads_and_name_like_torch(p):
    a0 = np.array([[1.0, 2.0], [3.0, 4.5]])
    b0 = np.array([0.5, -1.0])
    results = []
    for lib in (torch, sf):
        a = lib.tensor(a0, requires_grad=True)
        b = lib.tensor(b0, requires_grad=True)
        d = lib.dist(a, b, p)
        ga, gb = lib.autograd.grad(d, (a, b), create_graph=True)
        (gga,) = lib.autograd.grad((ga * ga).sum(), a) if p in (2, 3) else (ga,)
        results.append((d.detach().numpy(), ga.detach().numpy(), gb.detach().numpy(), gga.detach().numpy(),
                        d.grad_fn.name(), str(d)))
    (tv, tga, tgb, tgg, tname, tstr), (sv, sga, sgb, sgg, sname, sstr) = results
    assert sname == tname == "DistBackward0"
    assert sstr.replace("shardflow.", "torch.") == tstr
    for s, t in ((sv, tv), (sga, tga), (sgb, tgb), (sgg, tgg)):
        np.testing.assert_allclose(s, t, rtol=1e-12, atol=1e-15)


def test_dist_refuses_integer_tensors():
    with pytest.raises(RuntimeError, match="Expected a floating point tensor"):
        sf.dist(sf.tensor([1, 2]), sf.tensor([0, 0]))
    with pytest.raises(RuntimeError):
        torch.dist(torch.tensor([1, 2]), torch.tensor([0, 0]))
