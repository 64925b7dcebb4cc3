"""Differential fuzzing of embeddings and reshaping layers against PyTorch (see
``_diff.py``): embedding (padding_idx, max_norm renormalising the weight in place),
embedding_bag (sum/mean/max, offsets, per_sample_weights, include_last_offset,
padding_idx, 2-D input), one_hot, pixel_shuffle/unshuffle, unfold/fold; backward."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ._diff import FUZZ, Inp, check, inp

DT = ("float32", "float64")


@st.composite
def emb_case(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    w = draw(inp(shape=(v, d), dtypes=DT, specials=False))
    ishape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    idx = np.array(draw(st.lists(st.integers(0, v - 1), min_size=int(np.prod(ishape)),
                                 max_size=int(np.prod(ishape)))), np.int64).reshape(ishape)
    pad = draw(st.sampled_from([None, 0, -1]))
    return w, Inp(idx), pad, draw(st.sampled_from([None, None, 1.0, 0.5])), draw(st.sampled_from([1.0, 2.0]))


@settings(FUZZ, max_examples=30)
@given(case=emb_case(), grad=st.booleans())
def test_embedding(case, grad):
    w, idx, pad, max_norm, nt = case
    # max_norm renormalises rows of the weight in place: torch refuses that on a leaf
    # requiring grad, so the weight is a fresh copy inside the call there
    if max_norm is None:
        check(lambda L, w, i: L.nn.functional.embedding(i, w, padding_idx=pad), [w, idx], grad=grad)
    else:
        check(lambda L, w, i: (lambda c: (L.nn.functional.embedding(i, c, pad, max_norm, nt), c))(w.detach().clone()),
              [w, idx])


@st.composite
def bag_case(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    w = draw(inp(shape=(v, d), dtypes=DT, specials=False))
    mode = draw(st.sampled_from(["sum", "mean", "max"]))
    two_d = draw(st.booleans())
    if two_d:
        b, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        idx = np.array(draw(st.lists(st.integers(0, v - 1), min_size=b * n, max_size=b * n)), np.int64).reshape(b, n)
        offsets, last = None, False
    else:
        n = draw(st.integers(0, 6))
        idx = np.array(draw(st.lists(st.integers(0, v - 1), min_size=n, max_size=n)), np.int64)
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=1, max_size=4)))
        cuts[0] = 0
        last = draw(st.booleans())
        offsets = np.array(cuts + ([n] if last else []), np.int64)
    psw = None
    if mode == "sum" and draw(st.booleans()):
        psw = draw(inp(shape=idx.shape, dtypes=(str(w.values.dtype),), specials=False, layout=False))
    pad = draw(st.sampled_from([None, 0]))
    return w, Inp(idx), None if offsets is None else Inp(offsets), mode, last, psw, pad


@settings(FUZZ, max_examples=37)
@given(case=bag_case(), grad=st.booleans())
def test_embedding_bag(case, grad):
    w, idx, off, mode, last, psw, pad = case
    ins = [w, idx] + ([off] if off is not None else []) + ([psw] if psw is not None else [])

    def fn(L, w, i, *rest):
        o = rest[0] if off is not None else None
        p = rest[-1] if psw is not None else None
        return L.nn.functional.embedding_bag(i, w, o, mode=mode, per_sample_weights=p, include_last_offset=last,
                                             padding_idx=pad)
    check(fn, ins, grad=grad, scale_tol=4)


@settings(FUZZ, max_examples=18)
@given(shape=st.lists(st.integers(0, 3), max_size=3), nc=st.sampled_from([-1, 4, 5]), data=st.data())
def test_one_hot(shape, nc, data):
    n = int(np.prod(shape))
    t = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64).reshape(shape)
    check(lambda L, t: L.nn.functional.one_hot(t, nc), [Inp(t)])


@st.composite
def shuffle_case(draw):
    r = draw(st.integers(1, 3))
    lead = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    c, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    x = draw(inp(shape=lead + (c * r * r, h, w), dtypes=DT + ("int64",), specials=False))
    y = draw(inp(shape=lead + (c, h * r, w * r), dtypes=DT, specials=False))
    return r, x, y


@settings(FUZZ, max_examples=18)
@given(case=shuffle_case(), grad=st.booleans())
def test_pixel_shuffle(case, grad):
    r, x, y = case
    check(lambda L, x: L.nn.functional.pixel_shuffle(x, r), [x], grad=grad)
    check(lambda L, y: L.nn.functional.pixel_unshuffle(y, r), [y], grad=grad)


@st.composite
def unfold_case(draw):
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pad = (draw(st.integers(0, 1)), draw(st.integers(0, 1)))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    sp = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    c = draw(st.integers(1, 2))
    batch = draw(st.sampled_from([(), (2,)]))
    x = draw(inp(shape=batch + (c,) + sp, dtypes=DT, specials=False))
    blocks = [(s + 2 * p - d * (kk - 1) - 1) // st_ + 1 for s, p, d, kk, st_ in zip(sp, pad, dil, k, stride)]
    cols = draw(inp(shape=batch + (c * k[0] * k[1], max(blocks[0], 0) * max(blocks[1], 0)), dtypes=DT,
                    specials=False))
    return dict(kernel_size=k, dilation=dil, padding=pad, stride=stride), sp, x, cols


@settings(FUZZ, max_examples=30)
@given(case=unfold_case(), grad=st.booleans())
def test_unfold_fold(case, grad):
    kw, sp, x, cols = case
    check(lambda L, x: L.nn.functional.unfold(x, **kw), [x], grad=grad, scale_tol=4)
    check(lambda L, c: L.nn.functional.fold(c, sp, **kw), [cols], grad=grad, scale_tol=4)
