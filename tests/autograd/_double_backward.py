"""Shared check for higher-order gradients: the gradient of the gradient of ``f`` against
torch 2.13, and (float64) against central finite differences of shardflow's own first-order
gradient. ``f(m, *tensors)`` is written once for both modules (``m`` is shardflow or torch)."""

from __future__ import annotations

import numpy as np
import torch

import shardflow as sf


def _first_grads(m, f, arrays, create_graph):
    xs = [m.tensor(a, requires_grad=True) for a in arrays]
    gs = m.autograd.grad(f(m, *xs), xs, create_graph=create_graph, allow_unused=True)
    return xs, gs


def double_grads(m, f, arrays, vs):
    """d/dx sum_i <grad_i f(x), v_i>: the Hessian-vector product, through create_graph."""
    xs, gs = _first_grads(m, f, arrays, True)
    total = None
    for g, v in zip(gs, vs):
        if g is None:
            continue
        term = (g * m.tensor(v)).sum()
        total = term if total is None else total + term
    for x in xs:
        x.grad = None
    if total is None or not total.requires_grad:
        return [g.detach().numpy() for g in gs], [np.zeros_like(a) for a in arrays]
    total.backward()
    return ([None if g is None else g.detach().numpy() for g in gs],
            [np.zeros_like(a) if x.grad is None else x.grad.numpy() for x, a in zip(xs, arrays)])


def check_double_backward(f, arrays, rtol=1e-6, atol=1e-8, fd=True, seed=0, torch_ref=True):
    """Compare first and second derivatives of ``f`` at ``arrays`` with torch's (unless
    ``torch_ref`` is False: torch lacks that double backward) and with finite differences
    of shardflow's first derivative when ``fd``."""
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(a.shape) for a in arrays]
    g_sf, h_sf = double_grads(sf, f, arrays, vs)
    g_t, h_t = double_grads(torch, f, arrays, vs) if torch_ref else (g_sf, h_sf)
    for a, b in zip(g_sf, g_t):
        if a is not None and b is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    for a, b in zip(h_sf, h_t):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    if fd:
        eps = 1e-6
        for i, a in enumerate(arrays):
            flat = a.reshape(-1)
            num = np.zeros_like(flat)
            for k in range(flat.size):
                def gv(delta, k=k):
                    shifted = [b.copy() for b in arrays]
                    shifted[i].reshape(-1)[k] += delta
                    _, gs = _first_grads(sf, f, shifted, False)
                    return sum(float((g.numpy() * v).sum()) for g, v in zip(gs, vs) if g is not None)
                num[k] = (gv(eps) - gv(-eps)) / (2 * eps)
            np.testing.assert_allclose(h_sf[i].reshape(-1), num, rtol=1e-4, atol=1e-5)
    return g_sf, h_sf
