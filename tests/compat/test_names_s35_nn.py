"""nn names added in session 35 against torch 2.13: ``nn.CrossMapLRN2d`` (legacy LRN, torch's
forward window and backward formula) and ``F.linear_cross_entropy`` / ``nn.LinearCrossEntropyLoss``
/ ``nn.LinearCrossEntropyOptions`` (values, gradients, errors)."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("size,channels", [(2, 3), (3, 6), (4, 5), (5, 7)])
def test_cross_map_lrn2d_values_and_gradients_match_torch(size, channels):
    rng = np.random.default_rng(size * 10 + channels)
    a = rng.standard_normal((2, channels, 3, 2))
    g = rng.standard_normal(a.shape)
    out = {}
    for m in (torch, sf):
        x = m.tensor(a, requires_grad=True)
        lrn = m.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)
        y = lrn(x)
        y.backward(m.tensor(g))
        out[m] = (y, x.grad, repr(lrn))
    np.testing.assert_allclose(_np(out[sf][0]), _np(out[torch][0]), rtol=1e-10)
    np.testing.assert_allclose(_np(out[sf][1]), _np(out[torch][1]), rtol=1e-10, atol=1e-12)
    assert out[sf][2] == out[torch][2]


def test_cross_map_lrn2d_errors_match_torch():
    for m in (torch, sf):
        with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
            m.nn.CrossMapLRN2d(3)(m.ones(2, 3, 4))
        y = m.nn.CrossMapLRN2d(1)(m.ones(1, 3, 2, 2, requires_grad=True))
        with pytest.raises(RuntimeError, match=r"start \(1\) \+ length \(3\) exceeds dimension size \(3\)"):
            y.sum().backward()  # torch's backward needs size >= 2


def _lce_case(m, a, w, b, tgt, **kw):
    x = m.tensor(a, requires_grad=True)
    weight = m.tensor(w, requires_grad=True)
    bias = m.tensor(b, requires_grad=True) if b is not None else None
    loss = m.nn.functional.linear_cross_entropy(x, weight, m.tensor(tgt), linear_bias=bias, **kw)
    loss.sum().backward()
    return [loss, x.grad, weight.grad] + ([bias.grad] if bias is not None else [])


def test_linear_cross_entropy_matches_torch_values_and_gradients():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3))
    w, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
    w_k, b_k = rng.standard_normal((5, 2, 3)), rng.standard_normal((5, 2))  # K-dimensional loss
    idx = np.array([0, 4, -100, 2])
    probs = rng.random((4, 5))
    probs /= probs.sum(1, keepdims=True)
    cases = [
        (a, w, b, idx, {}),
        (a, w, None, np.array([0, 4, 1, 2]), {"reduction": "sum", "ignore_index": 4, "label_smoothing": 0.1}),
        (a, w, b, np.array([1, 2, 3, 0]), {"weight": None, "reduction": "none"}),
        (a, w, None, probs, {"label_smoothing": 0.2}),
        (a, w_k, b_k, rng.integers(0, 5, (4, 2)), {"reduction": "mean"}),
        (a[0], w, b, np.array(3), {}),  # unbatched
    ]
    for a_, w_, b_, t_, kw in cases:
        got = {m: _lce_case(m, a_, w_, b_, t_, **kw) for m in (torch, sf)}
        for t_val, s_val in zip(got[torch], got[sf], strict=True):
            np.testing.assert_allclose(_np(s_val), _np(t_val), rtol=1e-10, atol=1e-12)
    cw = rng.random(5)  # class weights
    got = {m: _lce_case(m, a, w, b, idx, weight=m.tensor(cw)) for m in (torch, sf)}
    for t_val, s_val in zip(got[torch], got[sf], strict=True):
        np.testing.assert_allclose(_np(s_val), _np(t_val), rtol=1e-10, atol=1e-12)


def test_linear_cross_entropy_errors_match_torch():
    bad = [
        lambda m: (m.ones(2, 2, 3), m.ones(4, 3), m.zeros(2, dtype=m.long), {}),
        lambda m: (m.ones(2, 3), m.ones(3), m.zeros(2, dtype=m.long), {}),
        lambda m: (m.ones(2, 3), m.ones(4, 2), m.zeros(2, dtype=m.long), {}),
        lambda m: (m.ones(2, 3), m.ones(4, 3), m.zeros(2, dtype=m.long), {"linear_bias": m.ones(3)}),
        lambda m: (m.ones(3), m.ones(4, 2, 3), m.zeros(2, dtype=m.long), {}),
        lambda m: (m.ones(2, 3), m.ones(4, 3), m.ones(2, 4) / 4, {"ignore_index": 1}),
    ]
    for make in bad:
        msgs = []
        for m in (torch, sf):
            x, w, t, kw = make(m)
            with pytest.raises(RuntimeError) as e:
                m.nn.functional.linear_cross_entropy(x, w, t, **kw)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
    for m in (torch, sf):
        with pytest.raises(RuntimeError, match="expected weight shape to be"):
            m.nn.LinearCrossEntropyLoss(3, 4, weight=m.ones(3))
        with pytest.raises(RuntimeError, match="label_smoothing to be in range"):
            m.nn.LinearCrossEntropyLoss(3, 4, label_smoothing=1.5)
        for kw in ({"acc_policy": "fast"}, {"chunking_method": "rows"}, {"batch_chunk_size": 0},
                   {"acc_dtype": m.int32}):
            with pytest.raises(ValueError):
                m.nn.LinearCrossEntropyOptions(**kw)


def test_linear_cross_entropy_loss_module_trains_like_torch():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 4)).astype(np.float32)
    tgt = rng.integers(0, 3, (6, 2))
    runs = {}
    for m in (torch, sf):
        torch.manual_seed(0)
        crit = m.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True, label_smoothing=0.05)
        if m is sf:
            crit.load_state_dict({k: sf.tensor(v.numpy()) for k, v in runs[torch][1].items()})
        state0 = {k: v.clone() for k, v in crit.state_dict().items()}
        opt = m.optim.SGD(crit.parameters(), lr=0.5)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = crit(m.tensor(a), m.tensor(tgt))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs[m] = (losses, state0, crit)
    assert list(runs[sf][1]) == list(runs[torch][1]) == ["linear.weight", "linear.bias"]
    np.testing.assert_allclose(runs[sf][0], runs[torch][0], rtol=1e-5)
    np.testing.assert_allclose(_np(runs[sf][2].linear.weight), _np(runs[torch][2].linear.weight), rtol=1e-5, atol=1e-6)
    assert repr(runs[sf][2]) == repr(runs[torch][2])
    # options: validated, then the reference path with a warning (shardflow has no chunked kernel)
    crit = sf.nn.LinearCrossEntropyLoss(4, 3, options=sf.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    with pytest.warns(UserWarning, match="chunked path"):
        got = crit(sf.tensor(a), sf.tensor(tgt[:, 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = sf.nn.functional.cross_entropy(crit.linear(sf.tensor(a)), sf.tensor(tgt[:, 0]))
    assert got.item() == pytest.approx(want.item(), rel=1e-6)


def test_swap_in_optimizer_params_and_state_matches_torch():
    rng = np.random.default_rng(5)
    w0, g1, g2 = (rng.standard_normal((3, 2)).astype(np.float32) for _ in range(3))
    out = {}
    for m in (torch, sf):
        p = m.nn.Parameter(m.tensor(w0))
        opt = m.optim.Adam([p], lr=0.1)
        p.grad = m.tensor(g1)
        opt.step()  # the live state exists
        live_before = p.detach().clone()
        sd = opt.state_dict()
        swap_state = {"state": {k: {n: (t.clone() if isinstance(t, m.Tensor) else t) for n, t in v.items()}
                                for k, v in sd["state"].items()},
                      "param_groups": [dict(g, lr=0.5) for g in sd["param_groups"]]}
        q = m.nn.Parameter(m.tensor(w0) * 2)
        q.grad = m.tensor(g2)
        with m.optim.swap_in_optimizer_params_and_state(opt, {"w": q}, swap_state):
            assert opt.param_groups[0]["params"][0] is q and opt.param_groups[0]["lr"] == 0.5
            opt.step()
        assert opt.param_groups[0]["params"][0] is p and opt.param_groups[0]["lr"] == 0.1
        assert np.array_equal(_np(p), _np(live_before))  # the live parameter untouched
        out[m] = (q, swap_state["state"][0]["exp_avg"], opt.state[p]["exp_avg"])
        with pytest.raises(RuntimeError, match="different number of params than the live"):
            with m.optim.swap_in_optimizer_params_and_state(
                    opt, {"w": q}, {"state": {}, "param_groups": [dict(sd["param_groups"][0], params=[])]}):
                pass
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with m.optim.swap_in_optimizer_params_and_state(m.optim.SGD([q], lr=0.1), {"w": q}, sd):
                pass
    for a, b in zip(out[torch], out[sf], strict=True):  # the swap-in state was updated in place
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6)
