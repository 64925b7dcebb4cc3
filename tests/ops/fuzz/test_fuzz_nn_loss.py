"""Differential fuzzing of the losses of ``torch.nn.functional`` against PyTorch (see
``_diff.py``): every loss with reduction none/mean/sum, with weight=, ignore_index=,
label_smoothing=, pos_weight=, class-probability targets, K-dim inputs, log_target,
margins and p-norms where the loss takes them, on empty batches and non-contiguous
inputs; backward with respect to the input and the float targets."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ._diff import FUZZ, Inp, check, inp

RED = ["none", "mean", "sum"]
DT = ("float32", "float64")


def _cls(draw, shape, c, ignore=None):
    t = np.array(draw(st.lists(st.integers(0, max(c - 1, 0)), min_size=int(np.prod(shape)),
                               max_size=int(np.prod(shape)))), dtype=np.int64).reshape(shape)
    if ignore is not None and t.size and draw(st.booleans()):
        t.flat[0] = ignore
    return Inp(t)


@st.composite
def class_case(draw):
    n = draw(st.sampled_from([0, 1, 2, 3]))
    c = draw(st.integers(1, 4))
    kdims = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    batchless = not kdims and n == 1 and draw(st.booleans())
    shape = ((c,) if batchless else (n, c) + kdims)
    dt = draw(st.sampled_from(DT))
    x = draw(inp(shape=shape, dtypes=(dt,), specials=False))
    kw = {"reduction": draw(st.sampled_from(RED))}
    w = draw(inp(shape=(c,), dtypes=(dt,), specials=False, layout=False)) if draw(st.booleans()) else None
    if w is not None:
        w.values = np.abs(w.values).astype(w.values.dtype) + np.asarray(0.5, w.values.dtype)
    ignore = draw(st.sampled_from([None, -100, 0, 1]))
    if ignore is not None:
        kw["ignore_index"] = ignore
    tshape = () if batchless else (n,) + kdims
    return x, w, kw, _cls(draw, tshape, c, ignore), shape, dt


@settings(FUZZ, max_examples=18)
@given(case=class_case(), grad=st.booleans(), data=st.data())
def test_cross_entropy_and_nll(case, grad, data):
    x, w, kw, t, shape, dt = case
    ins = [x, t] + ([w] if w is not None else [])
    ls = data.draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))

    def ce(L, x, t, w=None):
        return L.nn.functional.cross_entropy(x, t, weight=w, label_smoothing=ls, **kw)

    def nll(L, x, t, w=None):
        return L.nn.functional.nll_loss(L.log_softmax(x, 1 if x.ndim > 1 else 0), t, weight=w, **kw)
    check(ce, ins, grad=grad, scale_tol=4)
    check(nll, ins, grad=grad, scale_tol=4)
    if data.draw(st.booleans()):  # class probabilities as the target
        p = data.draw(inp(shape=shape, dtypes=(dt,), specials=False))
        p.values = np.abs(p.values).astype(p.values.dtype)
        kw2 = {k: v for k, v in kw.items() if k != "ignore_index"}
        check(lambda L, x, p, w=None: L.nn.functional.cross_entropy(x, p, weight=w, label_smoothing=ls, **kw2),
              [x, p] + ([w] if w is not None else []), grad=grad, scale_tol=4)


@st.composite
def pointwise_case(draw):
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=3)))
    dt = draw(st.sampled_from(DT))
    a = draw(inp(shape=shape, dtypes=(dt,), specials=False))
    b = draw(inp(shape=shape, dtypes=(dt,), specials=False))
    return a, b, draw(st.sampled_from(RED))


def _prob(a):
    """Values in (0, 1) (with the ends 0 and 1 sometimes) from arbitrary ones."""
    v = np.asarray(1 / (1 + np.exp(-a.values.astype(np.float64))))
    v[np.abs(a.values) >= 10] = np.round(v[np.abs(a.values) >= 10])
    return Inp(v.astype(a.values.dtype), a.layout)


POINTWISE = {
    "l1": lambda F, x, y, r: F.l1_loss(x, y, reduction=r),
    "mse": lambda F, x, y, r: F.mse_loss(x, y, reduction=r),
    "smooth_l1": lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.5),
    "smooth_l1_0": lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.0),
    "huber": lambda F, x, y, r: F.huber_loss(x, y, reduction=r, delta=2.0),
    "soft_margin": lambda F, x, y, r: F.soft_margin_loss(x, y.sign(), reduction=r),
    "kl_div": lambda F, x, y, r: F.kl_div(x, y.abs(), reduction=r),
    "kl_div_log": lambda F, x, y, r: F.kl_div(x, y, reduction=r, log_target=True),
    "poisson": lambda F, x, y, r: F.poisson_nll_loss(x, y.abs(), reduction=r),
    # SKIP: a target of 0 with full=True: torch's target gradient is NaN there (the masked
    # Stirling term's backward, 0 * log(0)); shardflow's is the limit. Targets kept > 0
    "poisson_full": lambda F, x, y, r: F.poisson_nll_loss(x.abs(), y.abs() * 3 + 0.5, log_input=False, full=True,
                                                         reduction=r),
    "hinge": lambda F, x, y, r: F.hinge_embedding_loss(x, y.sign(), margin=0.5, reduction=r),
    "bce_logits": lambda F, x, y, r: F.binary_cross_entropy_with_logits(x, y.sigmoid(), reduction=r),
}


@settings(FUZZ, max_examples=60)
@given(case=pointwise_case(), name=st.sampled_from(sorted(POINTWISE)), grad=st.booleans())
def test_pointwise_losses(case, name, grad):
    a, b, r = case
    f = POINTWISE[name]
    check(lambda L, x, y: f(L.nn.functional, x, y, r), [a, b], grad=grad, scale_tol=4)


@settings(FUZZ, max_examples=30)
@given(case=pointwise_case(), grad=st.booleans(), data=st.data())
def test_binary_cross_entropy(case, grad, data):
    a, b, r = case
    p, t = _prob(a), _prob(b)
    shape = a.values.shape
    w = data.draw(inp(shape=shape[data.draw(st.integers(0, len(shape))):], dtypes=(str(a.values.dtype),),
                      specials=False, layout=False))
    w.values = np.abs(w.values).astype(w.values.dtype)
    pw = data.draw(inp(shape=shape[-1:], dtypes=(str(a.values.dtype),), specials=False, layout=False))
    pw.values = np.abs(pw.values).astype(pw.values.dtype)
    check(lambda L, x, y, w: L.nn.functional.binary_cross_entropy(x, y, weight=w, reduction=r), [p, t, w],
          grad=grad, scale_tol=4)
    check(lambda L, x, y, w, pw: L.nn.functional.binary_cross_entropy_with_logits(
        x, y, weight=w, pos_weight=pw, reduction=r), [a, t, w, pw], grad=grad, scale_tol=4)


@st.composite
def margin_case(draw):
    n = draw(st.sampled_from([0, 1, 2, 3]))
    c = draw(st.integers(1, 4))
    dt = draw(st.sampled_from(DT))
    batchless = n == 1 and draw(st.booleans())
    x = draw(inp(shape=(c,) if batchless else (n, c), dtypes=(dt,), specials=False))
    return x, c, batchless, dt, draw(st.sampled_from(RED))


@settings(FUZZ, max_examples=37)
@given(case=margin_case(), grad=st.booleans(), data=st.data())
def test_margin_losses(case, grad, data):
    x, c, batchless, dt, r = case
    n = 1 if batchless else x.values.shape[0]
    t = _cls(data.draw, () if batchless else (n,), c)
    p, margin = data.draw(st.sampled_from([1, 2])), data.draw(st.sampled_from([0.5, 1.0, 2.0]))
    w = Inp((np.arange(c) % 3 + 0.5).astype(dt))
    # multilabel: targets are class indices padded with -1 after the first -1
    ml = np.array(data.draw(st.lists(st.integers(-1, c - 1), min_size=n * c, max_size=n * c)), np.int64)
    ml = ml.reshape(x.values.shape)
    y = Inp((ml >= 0).astype(dt))
    check(lambda L, x, y, w: L.nn.functional.multilabel_soft_margin_loss(x, y, weight=w, reduction=r),
          [x, y, w], grad=grad, scale_tol=4)
    # SKIP: an empty batch of the two kernels below: torch's 'sum' returns uninitialised memory
    if n == 0:
        return
    check(lambda L, x, t: L.nn.functional.multi_margin_loss(x, t, p=p, margin=margin, reduction=r), [x, t],
          grad=grad, scale_tol=4)
    check(lambda L, x, t, w: L.nn.functional.multi_margin_loss(x, t, p=p, margin=margin, weight=w, reduction=r),
          [x, t, w], grad=grad, scale_tol=4)
    check(lambda L, x, t: L.nn.functional.multilabel_margin_loss(x, t, reduction=r), [x, Inp(ml)], grad=grad,
          scale_tol=4)


@st.composite
def embed_case(draw):
    n = draw(st.sampled_from([0, 1, 2, 3]))
    d = draw(st.integers(1, 4))
    dt = draw(st.sampled_from(DT))
    batchless = n == 1 and draw(st.booleans())
    shape = (d,) if batchless else (n, d)
    a, b, c = (draw(inp(shape=shape, dtypes=(dt,), specials=False)) for _ in range(3))
    y = Inp(np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n)), dt).reshape(
        () if batchless else (n,)))
    return a, b, c, y, draw(st.sampled_from(RED))


@settings(FUZZ, max_examples=37)
@given(case=embed_case(), grad=st.booleans(), data=st.data())
def test_pair_and_triplet_losses(case, grad, data):
    a, b, c, y, r = case
    m = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    check(lambda L, a, b, y: L.nn.functional.cosine_embedding_loss(a, b, y, margin=m, reduction=r), [a, b, y],
          grad=grad, scale_tol=4)
    p, swap = data.draw(st.sampled_from([1.0, 2.0, 3.0])), data.draw(st.booleans())
    check(lambda L, a, b, c: L.nn.functional.triplet_margin_loss(a, b, c, margin=m + 0.5, p=p, swap=swap,
                                                                 reduction=r), [a, b, c], grad=grad, scale_tol=4)
    check(lambda L, a, b, c: L.nn.functional.triplet_margin_with_distance_loss(
        a, b, c, margin=m + 0.5, swap=swap, reduction=r), [a, b, c], grad=grad, scale_tol=4)
    if a.values.ndim == 2:
        check(lambda L, a, b, y: L.nn.functional.margin_ranking_loss(a[:, 0], b[:, 0], y, margin=m, reduction=r),
              [a, b, y], grad=grad, scale_tol=4)


@st.composite
def gaussian_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    dt = draw(st.sampled_from(DT))
    x, t = (draw(inp(shape=shape, dtypes=(dt,), specials=False)) for _ in range(2))
    vshape = draw(st.sampled_from([shape, shape[:-1] + (1,), shape[:-1]]))
    v = draw(inp(shape=vshape, dtypes=(dt,), specials=False))
    v.values = np.abs(v.values).astype(dt)  # zeros too: clamped to eps
    return x, t, v, draw(st.booleans()), draw(st.sampled_from(RED))


@settings(FUZZ, max_examples=22)
@given(case=gaussian_case(), grad=st.booleans())
def test_gaussian_nll_loss(case, grad):
    x, t, v, full, r = case
    check(lambda L, x, t, v: L.nn.functional.gaussian_nll_loss(x, t, v, full=full, eps=1e-3, reduction=r),
          [x, t, v], grad=grad, scale_tol=4)


@st.composite
def ctc_case(draw):
    t_len, n, c = draw(st.integers(1, 6)), draw(st.integers(1, 2)), draw(st.integers(2, 4))
    x = draw(inp(shape=(t_len, n, c), dtypes=("float64",), specials=False, layout=False))
    s = draw(st.integers(0, 3))
    tg = np.array(draw(st.lists(st.integers(1, c - 1), min_size=n * s, max_size=n * s)), np.int64).reshape(n, s)
    il = np.array([draw(st.integers(0, t_len)) for _ in range(n)], np.int64)  # 0: torch accepts it
    tl = np.array([draw(st.integers(0, s)) for _ in range(n)], np.int64)
    return x, Inp(tg), Inp(il), Inp(tl), draw(st.sampled_from(RED)), draw(st.booleans())


@settings(FUZZ, max_examples=22)
@given(case=ctc_case(), grad=st.booleans())
def test_ctc_loss(case, grad):
    x, tg, il, tl, r, zi = case
    check(lambda L, x, tg, il, tl: L.nn.functional.ctc_loss(L.log_softmax(x, 2), tg, il, tl, reduction=r,
                                                            zero_infinity=zi), [x, tg, il, tl], grad=grad,
          scale_tol=4)
