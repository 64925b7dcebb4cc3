"""RNN / LSTM / GRU and their cells against torch (torch's state_dict loaded into ours: same
outputs, final states, and gradients of every weight, the input and the initial state),
packed variable-length batches (nn.utils.rnn), the fused recurrence op against float64
finite differences, and the PyTorch-named errors."""

import warnings

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as th_rnn

import shardflow as sf
import shardflow.nn as nn
from shardflow.nn.utils import rnn as sf_rnn
from shardflow.ops.recurrence import recurrence
from shardflow.testing.gradcheck import gradcheck

T, B, I, H = 5, 3, 4, 6


def _load(th_mod, sf_mod):
    sf_mod.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in th_mod.state_dict().items()})


def _close(a, b, what, rtol=1e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol, err_msg=what)


def _run_both(kind, kw, *, batched=True, with_hx=True, seed=0):
    """Same weights, inputs and initial states in torch and shardflow (float32); returns
    ((torch outputs, shardflow outputs), (torch leaves, shardflow leaves), modules)."""
    torch.manual_seed(seed)
    th = getattr(torch.nn, kind)(I, H, **kw)
    m = getattr(nn, kind)(I, H, **kw)
    _load(th, m)
    rng = np.random.default_rng(seed)
    num_states = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    if batched:
        x = rng.standard_normal((B, T, I) if kw.get("batch_first") else (T, B, I))
        hshape = (num_states, B, H)
    else:
        x, hshape = rng.standard_normal((T, I)), (num_states, H)
    arrays = [x.astype(np.float32)]
    if with_hx:
        arrays += [rng.standard_normal(hshape).astype(np.float32)
                   for _ in range(2 if kind == "LSTM" else 1)]
    t_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    s_leaves = [sf.tensor(a, requires_grad=True) for a in arrays]

    def call(mod, leaves):
        if not with_hx:
            out, hn = mod(leaves[0])
        elif kind == "LSTM":
            out, hn = mod(leaves[0], (leaves[1], leaves[2]))
        else:
            out, hn = mod(leaves[0], leaves[1])
        return [out, *(hn if kind == "LSTM" else [hn])]

    return (call(th, t_leaves), call(m, s_leaves)), (t_leaves, s_leaves), (th, m)


def _weighted_sum(outs, lib):
    total = 0
    for i, o in enumerate(outs):
        w = np.random.default_rng(100 + i).standard_normal(tuple(o.shape)).astype(np.float32)
        total = total + (o * lib.tensor(w)).sum()
    return total


CONFIGS = [
    ("RNN", {}),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("RNN", dict(num_layers=2, bidirectional=True, bias=False)),
    ("LSTM", {}),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=2, batch_first=True)),
    ("LSTM", dict(bias=False, bidirectional=True, batch_first=True)),
    ("GRU", {}),
    ("GRU", dict(num_layers=3, bidirectional=True)),
    ("GRU", dict(batch_first=True, bias=False)),
]


@pytest.mark.parametrize("kind,kw", CONFIGS, ids=[f"{k}-{'-'.join(kw) or 'default'}" for k, kw in CONFIGS])
@pytest.mark.parametrize("with_hx", [True, False], ids=["hx", "no-hx"])
def test_recurrent_layer_matches_torch_forward_and_backward(kind, kw, with_hx):
    (t_outs, s_outs), (t_leaves, s_leaves), (th, m) = _run_both(kind, kw, with_hx=with_hx)
    assert [k for k, _ in m.named_parameters()] == [k for k, _ in th.named_parameters()]
    for name, t, s in zip(["output", "h_n", "c_n"], t_outs, s_outs):
        assert tuple(s.shape) == tuple(t.shape), name
        _close(s.detach().numpy(), t.detach().numpy(), f"{kind} {name}")
    _weighted_sum(t_outs, torch).backward()
    _weighted_sum(s_outs, sf).backward()
    for k, (t, s) in enumerate(zip(t_leaves, s_leaves)):
        _close(s.grad.numpy(), t.grad.numpy(), f"{kind}: grad of input/state {k}")
    t_params = dict(th.named_parameters())
    for k, p in m.named_parameters():
        _close(p.grad.numpy(), t_params[k].grad.numpy(), f"{kind}: grad of {k}")


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched_input_matches_torch(kind):
    (t_outs, s_outs), (t_leaves, s_leaves), _ = _run_both(kind, dict(bidirectional=True), batched=False)
    for t, s in zip(t_outs, s_outs):
        assert tuple(s.shape) == tuple(t.shape)
        _close(s.detach().numpy(), t.detach().numpy(), f"{kind} unbatched")
    _weighted_sum(t_outs, torch).backward()
    _weighted_sum(s_outs, sf).backward()
    for t, s in zip(t_leaves, s_leaves):
        _close(s.grad.numpy(), t.grad.numpy(), f"{kind} unbatched grads")


CELLS = [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu", bias=False)), ("LSTMCell", {}),
         ("GRUCell", {}), ("GRUCell", dict(bias=False))]


@pytest.mark.parametrize("kind,kw", CELLS, ids=[f"{k}-{'-'.join(kw) or 'default'}" for k, kw in CELLS])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_cells_match_torch_over_a_few_steps(kind, kw, batched):
    torch.manual_seed(1)
    th = getattr(torch.nn, kind)(I, H, **kw)
    m = getattr(nn, kind)(I, H, **kw)
    _load(th, m)
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((3, B, I) if batched else (3, I)).astype(np.float32)
    tx, sx = torch.tensor(xs, requires_grad=True), sf.tensor(xs, requires_grad=True)

    def unroll(cell, x, lib):
        state = None  # the first step starts from zeros, as in torch
        outs = []
        for t in range(3):
            state = cell(x[t]) if state is None else cell(x[t], state)
            outs.append(state[0] if kind == "LSTMCell" else state)
        return lib.stack(outs) * lib.stack(outs) + (state[1].sum() if kind == "LSTMCell" else 0)

    t_out, s_out = unroll(th, tx, torch), unroll(m, sx, sf)
    _close(s_out.detach().numpy(), t_out.detach().numpy(), kind)
    t_out.sum().backward()
    s_out.sum().backward()
    _close(sx.grad.numpy(), tx.grad.numpy(), f"{kind} input grad")
    t_params = dict(th.named_parameters())
    for k, p in m.named_parameters():
        _close(p.grad.numpy(), t_params[k].grad.numpy(), f"{kind}: grad of {k}")


@pytest.mark.parametrize("mode", ["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_recurrence_op_float64_finite_differences(mode, reverse):
    G = {"lstm": 4, "gru": 3}.get(mode, 1)
    rng = np.random.default_rng(3)
    h = 2

    def leaf(*shape):
        return sf.tensor(rng.standard_normal(shape) * 0.7, requires_grad=True)

    xg, w, b, h0 = leaf(3, 2, G * h), leaf(G * h, h), leaf(G * h), leaf(2, h)
    c0 = leaf(2, h) if mode == "lstm" else None
    if mode == "rnn_relu":  # keep pre-activations away from the kink at 0
        xg = sf.tensor(np.abs(xg.numpy()) + 0.5, requires_grad=True)
        w = sf.tensor(np.abs(w.numpy()) * 0.3, requires_grad=True)
    inputs = [xg, w, b, h0] + ([c0] if c0 is not None else [])

    def f(xg, w, b, h0, c0=None):
        return recurrence(xg, w, b, h0, c0, mode=mode, reverse=reverse)

    assert gradcheck(f, inputs)


def test_parameter_names_shapes_and_init_follow_torch():
    m, th = nn.LSTM(3, 5, num_layers=2, bidirectional=True), torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in th.state_dict().items()]
    bound = 1 / np.sqrt(5)
    values = np.concatenate([p.numpy().ravel() for p in m.parameters()])
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse
    for cell, g in [(nn.GRUCell(3, 5), 3), (nn.LSTMCell(3, 5), 4), (nn.RNNCell(3, 5), 1)]:
        assert tuple(cell.weight_ih.shape) == (g * 5, 3) and tuple(cell.bias_hh.shape) == (g * 5,)


def test_modules_rnn_import_path_like_torch():
    from shardflow.nn.modules.rnn import GRU, LSTM, RNNBase

    assert LSTM is nn.LSTM and GRU is nn.GRU and isinstance(nn.RNN(2, 3), RNNBase)


def test_dropout_between_layers_equals_layerwise_composition():
    """Dropout acts on every layer's output but the last, in training mode only."""
    stacked = nn.LSTM(I, H, num_layers=2, dropout=0.5)
    first, second = nn.LSTM(I, H), nn.LSTM(H, H)
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
    stacked.eval()
    out_eval, _ = stacked(x)
    y2_eval, _ = second(y1)
    _close(out_eval.numpy(), y2_eval.numpy(), "eval: no dropout", rtol=1e-6, atol=1e-7)
    assert not np.allclose(out.numpy(), out_eval.numpy())


def test_dropout_with_one_layer_warns_like_torch():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.GRU(2, 3, num_layers=2, dropout=0.2)


def test_float64_module_and_flatten_parameters():
    m = nn.GRU(2, 3).double()
    m.flatten_parameters()
    out, h = m(sf.tensor(np.ones((4, 1, 2))))
    assert out.dtype == sf.float64 and tuple(h.shape) == (1, 1, 3)


def test_in_place_change_of_output_before_backward_raises():
    m = nn.LSTM(2, 3)
    out, _ = m(sf.randn(4, 1, 2))
    total = out.sum()  # sum's backward does not read `out`; only the recurrence does
    with sf.no_grad():  # writes into the hidden states the recurrence saved for backward
        out.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        total.backward()


@pytest.mark.parametrize("call,err,match", [
    (lambda: nn.LSTM(4, 6)(sf.zeros(5, 3, 5)), RuntimeError, "input.size\\(-1\\) must be equal to input_size. Expected 4, got 5"),
    (lambda: nn.GRU(4, 6, num_layers=2)(sf.zeros(5, 3, 4), sf.zeros(1, 3, 6)), RuntimeError, r"Expected hidden size \(2, 3, 6\), got \[1, 3, 6\]"),
    (lambda: nn.LSTM(4, 6)(sf.zeros(5, 3, 4), (sf.zeros(1, 3, 6), sf.zeros(1, 2, 6))), RuntimeError, r"Expected hidden\[1\] size \(1, 3, 6\)"),
    (lambda: nn.RNN(4, 6)(sf.zeros(5, 3, 4), sf.zeros(3, 6)), RuntimeError, "For batched 3-D input, hx should also be 3-D"),
    (lambda: nn.RNN(4, 6)(sf.zeros(2, 5, 3, 4)), ValueError, "Expected input to be 2D or 3D, got 4D"),
    (lambda: nn.RNN(4, 6)(sf.zeros(5, 1, 4), sf.zeros(1, 1, 6, dtype=sf.float64)), RuntimeError, "not the same dtype"),
    (lambda: nn.RNN(4, 6, nonlinearity="gelu"), ValueError, "Unknown nonlinearity 'gelu'"),
    (lambda: nn.GRU(4, 6, proj_size=2), ValueError, "proj_size argument is only supported for LSTM"),
    (lambda: nn.LSTM(4, 6, proj_size=6), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda: nn.LSTM(4, 6, dropout=1.5), ValueError, "dropout should be a number in range"),
    (lambda: nn.LSTM(4, 6)(sf.zeros(5, 3, 4), sf.zeros(1, 3, 6)), TypeError, "tuple \\(h_0, c_0\\)"),
    (lambda: nn.LSTMCell(4, 6)(sf.zeros(3, 5)), RuntimeError, "input has inconsistent input_size: got 5 expected 4"),
    (lambda: nn.GRUCell(4, 6)(sf.zeros(3, 4), sf.zeros(2, 6)), RuntimeError, "hidden0 has inconsistent size"),
])
def test_errors_name_what_was_expected(call, err, match):
    with pytest.raises(err, match=match):
        call()


# ------------------------------------------------------------------ packed sequences
PACKED = [
    ("LSTM", dict(), [5, 3, 2], True, False),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), [2, 5, 3, 5], False, True),
    ("GRU", dict(num_layers=2, bidirectional=True), [2, 5, 1, 3], False, True),
    ("RNN", dict(bidirectional=True, batch_first=True), [4, 4, 1], False, False),
]


@pytest.mark.parametrize("kind,kw,lengths,enforce_sorted,with_hx", PACKED,
                         ids=[f"{p[0]}-{p[2]}" for p in PACKED])
def test_packed_sequence_through_recurrent_layer_matches_torch(kind, kw, lengths, enforce_sorted, with_hx):
    torch.manual_seed(3)
    th, m = getattr(torch.nn, kind)(I, H, **kw), getattr(nn, kind)(I, H, **kw)
    _load(th, m)
    bf = kw.get("batch_first", False)
    rng = np.random.default_rng(6)
    T_, B_ = max(lengths), len(lengths)
    num_states = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    arrays = [rng.standard_normal((B_, T_, I) if bf else (T_, B_, I)).astype(np.float32)]
    if with_hx:
        arrays += [rng.standard_normal((num_states, B_, H)).astype(np.float32)
                   for _ in range(2 if kind == "LSTM" else 1)]
    t_leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    s_leaves = [sf.tensor(a, requires_grad=True) for a in arrays]
    outs = []
    for lib, pack_mod, mod, leaves in ((torch, th_rnn, th, t_leaves), (sf, sf_rnn, m, s_leaves)):
        packed = pack_mod.pack_padded_sequence(leaves[0], lengths, batch_first=bf,
                                               enforce_sorted=enforce_sorted)
        hx = None if not with_hx else (tuple(leaves[1:]) if kind == "LSTM" else leaves[1])
        out, hn = mod(packed, hx)
        assert type(out).__name__ == "PackedSequence"
        padded, out_lengths = pack_mod.pad_packed_sequence(out, batch_first=bf, padding_value=-2.0)
        assert out_lengths.tolist() == lengths
        outs.append([padded, *(hn if kind == "LSTM" else [hn])])
    for name, t, s in zip(["padded output", "h_n", "c_n"], *outs):
        _close(s.detach().numpy(), t.detach().numpy(), f"packed {kind}: {name}")
    _weighted_sum(outs[0], torch).backward()
    _weighted_sum(outs[1], sf).backward()
    for k, (t, s) in enumerate(zip(t_leaves, s_leaves)):
        _close(s.grad.numpy(), t.grad.numpy(), f"packed {kind}: grad of input/state {k}")
    t_params = dict(th.named_parameters())
    for k, p in m.named_parameters():
        _close(p.grad.numpy(), t_params[k].grad.numpy(), f"packed {kind}: grad of {k}")


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_recurrence_with_batch_sizes_float64_finite_differences(mode, reverse):
    G = {"lstm": 4, "gru": 3}.get(mode, 1)
    rng = np.random.default_rng(7)

    def leaf(*shape):
        return sf.tensor(rng.standard_normal(shape) * 0.7, requires_grad=True)

    inputs = [leaf(3, 3, G * 2), leaf(G * 2, 2), leaf(G * 2), leaf(3, 2)] + ([leaf(3, 2)] if mode == "lstm" else [])
    batch_sizes = np.array([3, 2, 1])

    def f(xg, w, b, h0, c0=None):
        return recurrence(xg, w, b, h0, c0, mode=mode, reverse=reverse, batch_sizes=batch_sizes)

    assert gradcheck(f, inputs)


def test_pad_and_pack_helpers_match_torch():
    seqs = [np.random.default_rng(i).standard_normal((n, 2)).astype(np.float32) for i, n in enumerate((3, 1, 4))]
    for bf in (False, True):
        for side in ("right", "left"):
            ref = th_rnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first=bf, padding_value=7.0, padding_side=side)
            ours = sf_rnn.pad_sequence([sf.tensor(s) for s in seqs], batch_first=bf, padding_value=7.0, padding_side=side)
            np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    t_packed = th_rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    s_packed = sf_rnn.pack_sequence([sf.tensor(s) for s in seqs], enforce_sorted=False)
    for name in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        np.testing.assert_array_equal(getattr(s_packed, name).numpy(), getattr(t_packed, name).numpy(), err_msg=name)
    for ours, ref in zip(sf_rnn.unpack_sequence(s_packed), seqs):
        np.testing.assert_array_equal(ours.numpy(), ref)
    padded, lengths = sf_rnn.pad_packed_sequence(s_packed, total_length=6)
    assert tuple(padded.shape) == (6, 3, 2) and lengths.tolist() == [3, 1, 4]


def test_packing_errors_follow_torch():
    x = sf.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        sf_rnn.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        sf_rnn.pack_padded_sequence(x, [4, 0, 0])
    packed = sf_rnn.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        sf_rnn.pad_packed_sequence(packed, total_length=3)
    with pytest.raises(RuntimeError, match="Expected 5, got 2"):
        nn.GRU(5, 3)(packed)


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_packed_dropout_between_layers_draws_torch_mask(mode):
    """A packed variable-length batch through a 2-layer bidirectional net with dropout in
    training mode: after the same ``manual_seed`` (weights and the between-layers mask from
    the generator), outputs, final states and gradients equal torch's. The mask is drawn over
    the packed rows only, as torch draws it on ``PackedSequence.data``; a mask drawn over
    the padded (T, B, F) batch takes other numbers (the chatbot tutorial's packed encoder
    diverged at its first step before this)."""
    results = []
    for lib, rnn_lib in ((torch, th_rnn), (sf, sf_rnn)):
        lib.manual_seed(3)
        net = getattr(lib.nn, mode)(I, H, num_layers=2, dropout=0.5, bidirectional=True)
        x = lib.linspace(-1, 1, T * B * I).reshape(T, B, I).requires_grad_()
        packed = rnn_lib.pack_padded_sequence(x, lib.tensor([5, 2, 3]), enforce_sorted=False)
        out, state = net(packed)
        h = state[0] if mode == "LSTM" else state
        padded, _ = rnn_lib.pad_packed_sequence(out)
        (padded.pow(2).sum() + h.sum()).backward()
        results.append([padded.detach().numpy(), h.detach().numpy(), x.grad.numpy(),
                        net.weight_ih_l1.grad.numpy(), net.weight_ih_l0_reverse.grad.numpy()])
    for name, th_v, sf_v in zip(["output", "h_n", "input grad", "weight_ih_l1 grad", "weight_ih_l0_reverse grad"],
                                *results, strict=True):
        _close(sf_v, th_v, name, rtol=1e-5, atol=1e-6)


def test_pack_padded_unsorted_orders_tied_lengths_as_torch():
    """``enforce_sorted=False`` sorts the lengths as torch's ``torch.sort(lengths,
    descending=True)`` does: a batch of more than 16 with equal lengths is ordered as torch's
    CPU sort leaves them (not stably), so ``sorted_indices`` and the packed rows agree."""
    lengths = [3, 5, 3, 2, 5, 3, 1, 4, 3, 5, 2, 3, 4, 5, 1, 3, 2, 3, 5, 4]
    x = np.random.default_rng(0).standard_normal((20, 5, 2)).astype(np.float32)
    th = th_rnn.pack_padded_sequence(torch.from_numpy(x), lengths, batch_first=True, enforce_sorted=False)
    got = sf_rnn.pack_padded_sequence(sf.from_numpy(x), lengths, batch_first=True, enforce_sorted=False)
    assert got.sorted_indices.tolist() == th.sorted_indices.tolist()
    assert got.unsorted_indices.tolist() == th.unsorted_indices.tolist()
    np.testing.assert_array_equal(got.data.numpy(), th.data.numpy())
