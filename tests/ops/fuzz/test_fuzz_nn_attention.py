"""Differential fuzzing of attention and recurrent layers against PyTorch (see
``_diff.py``): scaled_dot_product_attention (bool and float masks broadcasting over
batch and heads, is_causal with L != S, dropout 0, scale, enable_gqa), nn.MultiheadAttention
(batch_first, kdim/vdim, key_padding_mask, attn_mask, need_weights,
average_attn_weights, batch-less inputs) and RNN/LSTM/GRU (num_layers, bidirectional,
batch_first, proj_size, packed sequences, h0 given or not) with torch's parameters copied
into shardflow's module; backward."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ._diff import FUZZ, Inp, check, inp

DT = ("float32", "float64")
TOL = 8  # softmax-weighted sums and recurrences: another summation order than torch's


@st.composite
def sdpa_case(draw):
    b, h, L_, S, E, Ev = (draw(st.integers(1, 3)) for _ in range(6))
    gqa = draw(st.booleans())
    hk = draw(st.sampled_from([d for d in (1, h) if h % d == 0])) if gqa else h
    dt = draw(st.sampled_from(DT))
    lead = (b, h) if draw(st.booleans()) else (h,)
    klead = lead[:-1] + (hk,)
    q = draw(inp(shape=lead + (L_, E), dtypes=(dt,), specials=False))
    k = draw(inp(shape=klead + (S, E), dtypes=(dt,), specials=False))
    v = draw(inp(shape=klead + (S, Ev), dtypes=(dt,), specials=False))
    kind = draw(st.sampled_from(["none", "bool", "float", "causal"]))
    mask = None
    if kind in ("bool", "float"):
        mshape = draw(st.sampled_from([(L_, S), (1, L_, S), (h, 1, S), (1, S)]))
        m = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape)))))
        m = m.reshape(mshape)
        mask = Inp(m if kind == "bool" else np.where(m, 0.0, -np.inf).astype(dt) if draw(st.booleans())
                   else (m * 0.5).astype(dt))
    return q, k, v, mask, kind == "causal", draw(st.sampled_from([None, 0.5])), gqa


@settings(FUZZ, max_examples=37)
@given(case=sdpa_case(), grad=st.booleans())
def test_scaled_dot_product_attention(case, grad):
    q, k, v, mask, causal, scale, gqa = case
    ins = [q, k, v] + ([mask] if mask is not None else [])

    def fn(L, q, k, v, m=None):
        return L.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, scale=scale,
                                                            enable_gqa=gqa)
    check(fn, ins, grad=grad, scale_tol=TOL)


def _copy_params(tm, sm):
    """shardflow's module ``sm`` gets torch module ``tm``'s parameter values."""
    import shardflow as sf
    with sf.no_grad():
        for (n, p), (n2, p2) in zip(tm.named_parameters(), sm.named_parameters()):
            assert n == n2, (n, n2)
            p2.copy_(sf.tensor(p.detach().numpy()))


@st.composite
def mha_case(draw):
    e_heads = draw(st.sampled_from([(2, 1), (2, 2), (4, 2)]))
    e, heads = e_heads
    kdim = draw(st.sampled_from([None, 3]))
    vdim = draw(st.sampled_from([None, 1]))
    bf = draw(st.booleans())
    n, L_, S = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    batchless = draw(st.booleans())
    shape = (lambda t, d: (t, d) if batchless else ((n, t, d) if bf else (t, n, d)))
    q = draw(inp(shape=shape(L_, e), dtypes=("float64",), specials=False, layout=False))
    k = draw(inp(shape=shape(S, kdim or e), dtypes=("float64",), specials=False, layout=False))
    v = draw(inp(shape=shape(S, vdim or e), dtypes=("float64",), specials=False, layout=False))
    kpm = None
    if draw(st.booleans()):
        m = np.array(draw(st.lists(st.booleans(), min_size=S * (1 if batchless else n),
                                   max_size=S * (1 if batchless else n))))
        m[..., 0] = False if m.size else m  # a row of all-masked keys gives NaN in both
        kpm = m.reshape((S,) if batchless else (n, S))
    am = None
    if draw(st.booleans()):
        am = np.triu(np.ones((L_, S), bool), 1)
    return (e, heads, kdim, vdim, bf), q, k, v, kpm, am, draw(st.booleans()), draw(st.booleans())


@settings(FUZZ, max_examples=18)
@given(case=mha_case(), grad=st.booleans())
def test_multihead_attention(case, grad):
    (e, heads, kdim, vdim, bf), q, k, v, kpm, am, need, avg = case
    import torch
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(e, heads, kdim=kdim, vdim=vdim, batch_first=bf, dtype=torch.float64,
                                     bias=True)
    import shardflow as sf
    sm = sf.nn.MultiheadAttention(e, heads, kdim=kdim, vdim=vdim, batch_first=bf, dtype=sf.float64, bias=True)
    _copy_params(tm, sm)

    def fn(L, q, k, v):
        m = tm if L is torch else sm
        kp = None if kpm is None else L.tensor(kpm)
        a = None if am is None else L.tensor(am)
        return m(q, k, v, key_padding_mask=kp, attn_mask=a, need_weights=need, average_attn_weights=avg)
    check(fn, [q, k, v], grad=grad, scale_tol=TOL)


@st.composite
def rnn_case(draw):
    kind = draw(st.sampled_from(["RNN", "LSTM", "GRU"]))
    inp_size, hid = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    layers, bidir, bf = draw(st.integers(1, 2)), draw(st.booleans()), draw(st.booleans())
    proj = draw(st.integers(0, hid - 1)) if kind == "LSTM" else 0
    n, t = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    batchless = draw(st.integers(0, 3)) == 0
    shape = (t, inp_size) if batchless else ((n, t, inp_size) if bf else (t, n, inp_size))
    x = draw(inp(shape=shape, dtypes=("float64",), specials=False, layout=False))
    h0 = None
    if draw(st.booleans()):
        d = 2 if bidir else 1
        hshape = (layers * d,) + (() if batchless else (n,))
        h0 = [draw(inp(shape=hshape + ((proj or hid),), dtypes=("float64",), specials=False, layout=False))]
        if kind == "LSTM":
            h0.append(draw(inp(shape=hshape + (hid,), dtypes=("float64",), specials=False, layout=False)))
    lengths = None
    if not batchless and draw(st.booleans()):
        lengths = sorted([draw(st.integers(1, t)) for _ in range(n)], reverse=True)
        lengths[0] = t
    nl = draw(st.sampled_from(["tanh", "relu"])) if kind == "RNN" else None
    return kind, dict(input_size=inp_size, hidden_size=hid, num_layers=layers, bidirectional=bidir, batch_first=bf,
                      **({"proj_size": proj} if kind == "LSTM" else {}),
                      **({"nonlinearity": nl} if nl else {})), x, h0, lengths


@settings(FUZZ, max_examples=22)
@given(case=rnn_case(), grad=st.booleans())
def test_rnn(case, grad):
    kind, kw, x, h0, lengths = case
    import torch

    import shardflow as sf
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(dtype=torch.float64, **kw)
    sm = getattr(sf.nn, kind)(dtype=sf.float64, **kw)
    _copy_params(tm, sm)

    def fn(L, x, *h):
        m = tm if L is torch else sm
        hx = None if not h else (h[0] if kind != "LSTM" else (h[0], h[1]))
        if lengths is None:
            return m(x, hx)
        packed = L.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=kw["batch_first"])
        out, hn = m(packed, hx)
        return L.nn.utils.rnn.pad_packed_sequence(out, batch_first=kw["batch_first"])[0], hn
    check(fn, [x] + (h0 or []), grad=grad, scale_tol=TOL)
