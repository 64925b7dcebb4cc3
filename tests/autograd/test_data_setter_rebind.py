"""``t.data = x`` after a graph saved ``t``: the backward reads the new values, as PyTorch's
storage swap makes it (``shardflow/autograd/rebind.py``). Found by
christiancosgrove/pytorch-spectral-normalization-gan (``u.data = l2normalize(...)`` in every
forward; ``tests/parity/test_public_programs_more_ai.py``): shardflow's nodes kept the old
arrays and the discriminator's weight gradients were a few percent off."""

import numpy as np
import torch

import shardflow


def _both(program):
    return [program(lib) for lib in (torch, shardflow)]


def _same(results):
    (th, sf) = results
    for t, s in zip(th, sf, strict=True):
        # float32 matrix-vector products (the power iteration's) round differently between
        # BLAS builds: 1.3e-6 relative was seen on one entry
        np.testing.assert_allclose(np.asarray(s), np.asarray(t), rtol=1e-5, atol=1e-6)


def test_saved_input_reads_rebound_data_like_torch():
    def program(lib):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        u = lib.nn.Parameter(lib.tensor([1.0, 0.0]), requires_grad=False)
        s = u.dot(w.mv(lib.tensor([1.0, 1.0])))  # saves u (dot) for w's gradient
        u.data = lib.tensor([0.0, 1.0])
        s.backward()
        return [w.grad.tolist()]

    results = _both(program)
    assert results[0] == [[[0.0, 0.0], [1.0, 1.0]]]  # torch: the new u
    _same(results)


def test_rebound_data_with_create_graph_like_torch():
    """The same through ``autograd.grad(create_graph=True)`` (the higher-order engine)."""

    def program(lib):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        u = lib.tensor([1.0, 0.0])
        s = u.dot(w.mv(lib.tensor([1.0, 1.0])))
        u.data = lib.tensor([0.0, 1.0])
        (g,) = lib.autograd.grad(s, w, create_graph=True)
        return [g.tolist()]

    results = _both(program)
    assert results[0] == [[[0.0, 0.0], [1.0, 1.0]]]
    _same(results)


def test_chained_rebinding_and_alias_like_torch():
    """``a -> b -> c``: the graph that saved ``a`` reads ``c``; an alias taken by ``u.data``
    before keeps the old values (only the TensorImpl's storage moved)."""

    def program(lib):
        w = lib.ones(2, 2, requires_grad=True)
        u = lib.tensor([1.0, 0.0])
        s = (u * w).sum()
        alias = u.data
        u.data = lib.tensor([0.0, 1.0])
        u.data = lib.tensor([0.0, 3.0])
        s.backward()
        return [w.grad.tolist(), alias.tolist()]

    results = _both(program)
    assert results[0] == [[[0.0, 3.0], [0.0, 3.0]], [1.0, 0.0]]
    _same(results)


def test_spectral_norm_power_iteration_between_two_calls_like_torch():
    """pytorch-spectral-normalization-gan's pattern: the power iteration rebinds ``u.data`` /
    ``v.data`` in each forward; two forwards, one backward."""

    def program(lib):
        g = np.random.default_rng(0)
        w = lib.tensor(g.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
        u = lib.nn.Parameter(lib.tensor(g.standard_normal(4).astype(np.float32)), requires_grad=False)
        v = lib.nn.Parameter(lib.tensor(g.standard_normal(6).astype(np.float32)), requires_grad=False)
        x = lib.tensor(g.standard_normal((3, 6)).astype(np.float32))

        def forward(inp):
            v.data = lib.nn.functional.normalize(lib.mv(w.data.t(), u.data), dim=0)
            u.data = lib.nn.functional.normalize(lib.mv(w.data, v.data), dim=0)
            sigma = u.dot(w.mv(v))
            return inp @ (w / sigma).t()

        loss = forward(x).square().sum() + forward(2 * x).sum()
        loss.backward()
        return [w.grad.numpy().copy(), loss.item()]

    _same(_both(program))


def test_rebinding_with_nothing_saved_records_nothing():
    """``p.data = p.data * 0.9`` (EMA helpers): no graph holds the old array, so no record is
    kept and later backward passes pay nothing."""
    from shardflow.autograd import rebind

    before = set(rebind._rebound)  # (earlier tests' records, pruned as their arrays go)
    p = shardflow.zeros(3, requires_grad=True)
    for _ in range(3):
        p.data = p.data * 0.9 + 1
    assert set(rebind._rebound) <= before
