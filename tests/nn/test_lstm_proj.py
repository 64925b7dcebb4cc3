"""``nn.LSTM(proj_size=P)`` against torch 2.13: torch's state_dict loaded into ours gives the
same output, h_n (size P), c_n (size H) and gradients of every weight (``weight_hr_l{k}``
included), the input and the initial states — one and two layers, bidirectional,
batch_first, no bias, unbatched and packed input; parameter names, shapes, order and init
bounds as torch's, state_dicts that round-trip both ways, dropout between layers, the fused
recurrence op with a projection against float64 finite differences, and torch's errors."""

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as th_rnn

import shardflow as sf
import shardflow.nn as nn
from shardflow.nn.utils import rnn as sf_rnn
from shardflow.ops.recurrence import recurrence
from shardflow.testing.gradcheck import gradcheck

T, B, I, H, P = 5, 3, 4, 6, 3


def _load(src_state, module, lib):
    module.load_state_dict({k: lib.tensor(np.asarray(v.detach().numpy())) for k, v in src_state.items()})


def _close(a, b, what, rtol=1e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol, err_msg=what)


def _weighted_sum(outs, lib):
    total = 0
    for i, o in enumerate(outs):
        w = np.random.default_rng(100 + i).standard_normal(tuple(o.shape)).astype(np.float32)
        total = total + (o * lib.tensor(w)).sum()
    return total


def _pair(kw, seed=0):
    torch.manual_seed(seed)
    th = torch.nn.LSTM(I, H, proj_size=P, **kw)
    m = nn.LSTM(I, H, proj_size=P, **kw)
    _load(th.state_dict(), m, sf)
    return th, m


def _compare_grads(t_leaves, s_leaves, th, m, what):
    for k, (t, s) in enumerate(zip(t_leaves, s_leaves)):
        _close(s.grad.numpy(), t.grad.numpy(), f"{what}: grad of input/state {k}")
    t_params = dict(th.named_parameters())
    for k, p in m.named_parameters():
        _close(p.grad.numpy(), t_params[k].grad.numpy(), f"{what}: grad of {k}")


CONFIGS = [
    {},
    dict(num_layers=2, bidirectional=True),
    dict(num_layers=2, batch_first=True),
    dict(bias=False, bidirectional=True, batch_first=True),
]


@pytest.mark.parametrize("kw", CONFIGS, ids=["-".join(kw) or "default" for kw in CONFIGS])
@pytest.mark.parametrize("with_hx", [True, False], ids=["hx", "no-hx"])
def test_projected_lstm_matches_torch_forward_and_backward(kw, with_hx):
    th, m = _pair(kw)
    D, L = 2 if kw.get("bidirectional") else 1, kw.get("num_layers", 1)
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((B, T, I) if kw.get("batch_first") else (T, B, I))]
    if with_hx:
        arrays += [rng.standard_normal((L * D, B, P)), rng.standard_normal((L * D, B, H))]
    arrays = [a.astype(np.float32) for a in arrays]
    t_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    s_leaves = [sf.tensor(a, requires_grad=True) for a in arrays]
    outs = []
    for mod, leaves in ((th, t_leaves), (m, s_leaves)):
        out, (h_n, c_n) = mod(leaves[0], tuple(leaves[1:]) if with_hx else None)
        outs.append([out, h_n, c_n])
    out_shape = (B, T, D * P) if kw.get("batch_first") else (T, B, D * P)
    expected = [out_shape, (L * D, B, P), (L * D, B, H)]
    for name, t, s, shape in zip(["output", "h_n", "c_n"], *outs, expected):
        assert tuple(s.shape) == tuple(t.shape) == shape, name
        _close(s.detach().numpy(), t.detach().numpy(), f"proj LSTM {name}")
    _weighted_sum(outs[0], torch).backward()
    _weighted_sum(outs[1], sf).backward()
    _compare_grads(t_leaves, s_leaves, th, m, "proj LSTM")


def test_unbatched_projected_lstm_matches_torch():
    th, m = _pair(dict(bidirectional=True), seed=2)
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((T, I), (2, P), (2, H))]
    t_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    s_leaves = [sf.tensor(a, requires_grad=True) for a in arrays]
    t_out, (t_h, t_c) = th(t_leaves[0], (t_leaves[1], t_leaves[2]))
    s_out, (s_h, s_c) = m(s_leaves[0], (s_leaves[1], s_leaves[2]))
    for t, s in zip([t_out, t_h, t_c], [s_out, s_h, s_c]):
        assert tuple(s.shape) == tuple(t.shape)
        _close(s.detach().numpy(), t.detach().numpy(), "unbatched proj LSTM")
    _weighted_sum([t_out, t_h, t_c], torch).backward()
    _weighted_sum([s_out, s_h, s_c], sf).backward()
    _compare_grads(t_leaves, s_leaves, th, m, "unbatched proj LSTM")


@pytest.mark.parametrize("bf,lengths,enforce_sorted", [
    (False, [5, 3, 2], True), (True, [2, 5, 3, 5], False)], ids=["sorted", "unsorted-batch-first"])
def test_packed_input_through_projected_lstm_matches_torch(bf, lengths, enforce_sorted):
    kw = dict(num_layers=2, bidirectional=True, batch_first=bf)
    th, m = _pair(kw, seed=3)
    rng = np.random.default_rng(6)
    T_, B_ = max(lengths), len(lengths)
    arrays = [rng.standard_normal((B_, T_, I) if bf else (T_, B_, I)),
              rng.standard_normal((4, B_, P)), rng.standard_normal((4, B_, H))]
    arrays = [a.astype(np.float32) for a in arrays]
    t_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    s_leaves = [sf.tensor(a, requires_grad=True) for a in arrays]
    outs = []
    for pack_mod, mod, leaves in ((th_rnn, th, t_leaves), (sf_rnn, m, s_leaves)):
        packed = pack_mod.pack_padded_sequence(leaves[0], lengths, batch_first=bf,
                                               enforce_sorted=enforce_sorted)
        out, (h_n, c_n) = mod(packed, (leaves[1], leaves[2]))
        assert type(out).__name__ == "PackedSequence" and tuple(out.data.shape) == (sum(lengths), 2 * P)
        padded, out_lengths = pack_mod.pad_packed_sequence(out, batch_first=bf, padding_value=-2.0)
        assert out_lengths.tolist() == lengths
        outs.append([padded, h_n, c_n])
    for name, t, s in zip(["padded output", "h_n", "c_n"], *outs):
        _close(s.detach().numpy(), t.detach().numpy(), f"packed proj LSTM: {name}")
    _weighted_sum(outs[0], torch).backward()
    _weighted_sum(outs[1], sf).backward()
    _compare_grads(t_leaves, s_leaves, th, m, "packed proj LSTM")


@pytest.mark.parametrize("bias", [True, False])
def test_parameter_names_shapes_order_and_init_follow_torch(bias):
    kw = dict(num_layers=2, bidirectional=True, bias=bias)
    m, th = nn.LSTM(I, H, proj_size=P, **kw), torch.nn.LSTM(I, H, proj_size=P, **kw)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in th.state_dict().items()]
    assert tuple(m.weight_hr_l1_reverse.shape) == (P, H) and tuple(m.weight_hh_l0.shape) == (4 * H, P)
    assert tuple(m.weight_ih_l1.shape) == (4 * H, 2 * P)
    assert m._flat_weights_names == th._flat_weights_names
    assert m.all_weights[1][-1] is m.weight_hr_l0_reverse
    assert repr(m) == repr(th)
    bound = 1 / np.sqrt(H)  # every parameter, weight_hr included: U(-1/sqrt(H), 1/sqrt(H))
    for name, p in m.named_parameters():
        values = np.abs(p.numpy())
        assert values.max() <= bound, name
    hr = np.concatenate([m.weight_hr_l0.numpy().ravel(), m.weight_hr_l1.numpy().ravel()])
    assert np.abs(hr).max() > 0.6 * bound and hr.std() > 0.4 * bound  # spread over the range


def test_state_dict_round_trips_between_torch_and_shardflow():
    kw = dict(num_layers=2, bidirectional=True)
    ours = nn.LSTM(I, H, proj_size=P, **kw)  # shardflow's own init
    th = torch.nn.LSTM(I, H, proj_size=P, **kw)
    _load(ours.state_dict(), th, torch)  # shardflow -> torch
    back = nn.LSTM(I, H, proj_size=P, **kw)
    _load(th.state_dict(), back, sf)  # torch -> shardflow
    for k, v in ours.state_dict().items():
        np.testing.assert_array_equal(back.state_dict()[k].numpy(), v.numpy(), err_msg=k)
    x = np.random.default_rng(8).standard_normal((T, B, I)).astype(np.float32)
    t_out, (t_h, t_c) = th(torch.tensor(x))
    for mod in (ours, back):
        s_out, (s_h, s_c) = mod(sf.tensor(x))
        _close(s_out.numpy(), t_out.detach().numpy(), "round trip: output")
        _close(s_h.numpy(), t_h.detach().numpy(), "round trip: h_n")
        _close(s_c.numpy(), t_c.detach().numpy(), "round trip: c_n")


def test_training_steps_follow_torch():
    """Three SGD steps from the same weights: the projection's gradient feeds the next step."""
    th, m = _pair(dict(num_layers=2, batch_first=True), seed=5)
    t_opt = torch.optim.SGD(th.parameters(), lr=0.1)
    s_opt = sf.optim.SGD(m.parameters(), lr=0.1)
    rng = np.random.default_rng(9)
    for step in range(3):
        x = rng.standard_normal((B, T, I)).astype(np.float32)
        for lib, mod, opt in ((torch, th, t_opt), (sf, m, s_opt)):
            opt.zero_grad()
            out, (h_n, c_n) = mod(lib.tensor(x))
            ((out * out).mean() + h_n.sum() * 0.1 + c_n.mean()).backward()
            opt.step()
        for k, v in th.state_dict().items():
            _close(m.state_dict()[k].numpy(), v.numpy(), f"step {step}: {k}", atol=1e-5)


def test_dropout_between_projected_layers_equals_layerwise_composition():
    stacked = nn.LSTM(I, H, num_layers=2, dropout=0.5, proj_size=P)
    first, second = nn.LSTM(I, H, proj_size=P), nn.LSTM(P, H, proj_size=P)
    sd = stacked.state_dict()
    first.load_state_dict({k: v for k, v in sd.items() if k.endswith("l0")})
    second.load_state_dict({k.replace("l1", "l0"): v for k, v in sd.items() if k.endswith("l1")})
    x = sf.tensor(np.random.default_rng(4).standard_normal((T, B, I)).astype(np.float32))
    sf.manual_seed(7)
    out, (h_n, c_n) = stacked(x)
    sf.manual_seed(7)
    y1, (h1, c1) = first(x)
    y2, (h2, c2) = second(sf.nn.functional.dropout(y1, 0.5, True))
    _close(out.numpy(), y2.numpy(), "dropout between layers", rtol=1e-6, atol=1e-7)
    _close(h_n.numpy(), np.stack([h1.numpy()[0], h2.numpy()[0]]), "h_n", rtol=1e-6, atol=1e-7)
    _close(c_n.numpy(), np.stack([c1.numpy()[0], c2.numpy()[0]]), "c_n", rtol=1e-6, atol=1e-7)
    stacked.eval()
    out_eval, _ = stacked(x)
    assert not np.allclose(out.numpy(), out_eval.numpy())


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("packed", [False, True], ids=["dense", "batch-sizes"])
def test_recurrence_op_with_projection_float64_finite_differences(reverse, packed):
    rng = np.random.default_rng(3)
    h, p = 3, 2

    def leaf(*shape):
        return sf.tensor(rng.standard_normal(shape) * 0.7, requires_grad=True)

    inputs = [leaf(3, 3, 4 * h), leaf(4 * h, p), leaf(4 * h), leaf(3, p), leaf(3, h), leaf(p, h)]
    batch_sizes = np.array([3, 2, 1]) if packed else None

    def f(xg, w, b, h0, c0, w_hr):
        return recurrence(xg, w, b, h0, c0, w_hr, mode="lstm", reverse=reverse,
                          batch_sizes=batch_sizes)

    assert gradcheck(f, inputs)


def test_recurrence_projection_is_only_for_lstm():
    z = sf.zeros(2, 1, 3)
    with pytest.raises(ValueError, match="w_hr .* only for lstm"):
        recurrence(z, sf.zeros(3, 2), None, sf.zeros(1, 2), None, sf.zeros(2, 3), mode="gru")


@pytest.mark.parametrize("call,err,match", [
    (lambda lib: lib.nn.LSTM(4, 6, proj_size=6), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda lib: lib.nn.LSTM(4, 6, proj_size=9), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda lib: lib.nn.LSTM(4, 6, proj_size=-1), ValueError, "proj_size should be a positive integer or zero"),
    (lambda lib: lib.nn.GRU(4, 6, proj_size=2), ValueError, "proj_size argument is only supported for LSTM"),
    (lambda lib: lib.nn.RNN(4, 6, proj_size=2), ValueError, "proj_size argument is only supported for LSTM"),
    # h_0 is (L*D, B, proj_size); c_0 stays (L*D, B, hidden_size)
    (lambda lib: lib.nn.LSTM(4, 6, proj_size=3)(lib.zeros(5, 2, 4), (lib.zeros(1, 2, 6), lib.zeros(1, 2, 6))),
     RuntimeError, r"Expected hidden\[0\] size \(1, 2, 3\), got \[1, 2, 6\]"),
    (lambda lib: lib.nn.LSTM(4, 6, proj_size=3)(lib.zeros(5, 2, 4), (lib.zeros(1, 2, 3), lib.zeros(1, 2, 3))),
     RuntimeError, r"Expected hidden\[1\] size \(1, 2, 6\), got \[1, 2, 3\]"),
])
@pytest.mark.parametrize("lib", [torch, sf], ids=["torch", "shardflow"])
def test_errors_match_torch(call, err, match, lib):
    with pytest.raises(err, match=match):
        call(lib)
