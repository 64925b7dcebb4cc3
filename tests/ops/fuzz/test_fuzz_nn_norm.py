"""Differential fuzzing of normalisation against PyTorch (see ``_diff.py``): batch_norm and
instance_norm in training and eval, with and without affine parameters and running
statistics (their in-place updates compared, momentum=None's cumulative average through
the modules), group_norm, layer_norm (normalized_shape of 1-3 dims), rms_norm (eps None
or given) and local_response_norm (sizes larger than the channels); batch-less and
non-contiguous inputs; backward for input, weight and bias."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ._diff import FUZZ, check, inp

DT = ("float32", "float64")
# scale_tol: means and variances are sums in another order than torch's kernels
TOL = 8


@st.composite
def bn_case(draw):
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sp = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
    dt = draw(st.sampled_from(DT))
    x = draw(inp(shape=(n, c) + sp, dtypes=(dt,), specials=False))
    # SKIP: expanded (stride-0) weight and bias: torch's CPU batch_norm backward reads
    # garbage there (input gradients of 1e30 or a stray -3e-3 where the weight is 0)
    w = draw(inp(shape=(c,), dtypes=(dt,), specials=False, layout=False))
    b = draw(inp(shape=(c,), dtypes=(dt,), specials=False, layout=False))
    rm = np.linspace(-1, 1, c).astype(dt)
    rv = np.linspace(0.5, 2, c).astype(dt)
    return x, w, b, rm, rv, draw(st.booleans()), draw(st.booleans()), draw(st.booleans()), \
        draw(st.sampled_from([0.1, 0.0, 1.0]))


@settings(FUZZ, max_examples=30)
@given(case=bn_case(), grad=st.booleans())
def test_batch_norm(case, grad):
    x, w, b, rm, rv, training, affine, stats, mom = case
    # torch raises for training with one value per channel
    ins = [x, w, b] if affine else [x]

    def fn(L, x, w=None, b=None):
        m, v = (L.tensor(rm), L.tensor(rv)) if stats else (None, None)
        out = L.nn.functional.batch_norm(x, m, v, w, b, training=training or not stats, momentum=mom, eps=1e-3)
        return (out, m, v) if stats else out
    check(fn, ins, grad=grad, scale_tol=TOL)


@settings(FUZZ, max_examples=22)
@given(case=bn_case(), grad=st.booleans())
def test_instance_norm(case, grad):
    x, w, b, rm, rv, training, affine, stats, mom = case
    ins = [x, w, b] if affine else [x]

    def fn(L, x, w=None, b=None):
        m, v = (L.tensor(rm), L.tensor(rv)) if stats else (None, None)
        out = L.nn.functional.instance_norm(x, m, v, w, b, use_input_stats=training or not stats, momentum=mom,
                                            eps=1e-3)
        return (out, m, v) if stats else out
    check(fn, ins, grad=grad, scale_tol=TOL)


@settings(FUZZ, max_examples=15)
@given(case=bn_case(), steps=st.integers(1, 3), data=st.data())
def test_batch_norm_module_cumulative_average(case, steps, data):
    x = case[0]
    c, nd = x.values.shape[1], x.values.ndim
    name = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}[nd]
    affine, track = data.draw(st.booleans()), data.draw(st.booleans())

    def fn(L, x):
        # eps 1e-3: a constant channel divides the mean's rounding by sqrt(eps)
        m = getattr(L.nn, name)(c, eps=1e-3, momentum=None, affine=affine, track_running_stats=track,
                                dtype=x.dtype)
        outs = [m(x * (k + 1)) for k in range(steps)]
        m.eval()
        outs.append(m(x))
        return outs + ([m.running_mean, m.running_var, m.num_batches_tracked] if track else [])
    check(fn, [x], scale_tol=TOL)


@st.composite
def group_case(draw):
    g = draw(st.integers(1, 3))
    c = g * draw(st.integers(1, 2))
    n = draw(st.integers(1, 2))
    sp = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    dt = draw(st.sampled_from(DT))
    x = draw(inp(shape=(n, c) + sp, dtypes=(dt,), specials=False))
    w = draw(inp(shape=(c,), dtypes=(dt,), specials=False))
    b = draw(inp(shape=(c,), dtypes=(dt,), specials=False))
    return g, x, w, b, draw(st.booleans())


@settings(FUZZ, max_examples=22)
@given(case=group_case(), grad=st.booleans())
def test_group_norm(case, grad):
    g, x, w, b, affine = case
    if affine:
        check(lambda L, x, w, b: L.nn.functional.group_norm(x, g, w, b, eps=1e-3), [x, w, b], grad=grad,
              scale_tol=TOL)
    else:
        check(lambda L, x: L.nn.functional.group_norm(x, g, eps=1e-3), [x], grad=grad, scale_tol=TOL)


@st.composite
def layer_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
    k = draw(st.integers(1, len(shape)))
    ns = shape[-k:]
    dt = draw(st.sampled_from(DT))
    x = draw(inp(shape=shape, dtypes=(dt,), specials=False))
    w = draw(inp(shape=ns, dtypes=(dt,), specials=False))
    b = draw(inp(shape=ns, dtypes=(dt,), specials=False))
    return ns, x, w, b, draw(st.sampled_from(["none", "w", "wb"])), draw(st.sampled_from([None, 1e-3]))


@settings(FUZZ, max_examples=30)
@given(case=layer_case(), grad=st.booleans())
def test_layer_and_rms_norm(case, grad):
    ns, x, w, b, aff, eps = case
    if aff == "wb":
        check(lambda L, x, w, b: L.nn.functional.layer_norm(x, ns, w, b, eps=eps or 1e-5), [x, w, b], grad=grad,
              scale_tol=TOL)
    elif aff == "w":
        check(lambda L, x, w: L.nn.functional.layer_norm(x, ns, w, eps=eps or 1e-5), [x, w], grad=grad,
              scale_tol=TOL)
        check(lambda L, x, w: L.nn.functional.rms_norm(x, ns, w, eps=eps), [x, w], grad=grad, scale_tol=TOL)
    else:
        check(lambda L, x: L.nn.functional.layer_norm(x, ns, eps=eps or 1e-5), [x], grad=grad, scale_tol=TOL)
        check(lambda L, x: L.nn.functional.rms_norm(x, ns, eps=eps), [x], grad=grad, scale_tol=TOL)


@st.composite
def lrn_case(draw):
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    sp = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    # SKIP: non-contiguous 5-D inputs: torch's local_response_norm .view()s them and raises
    x = draw(inp(shape=(n, c) + sp, dtypes=DT, specials=False, layout=len(sp) < 3))
    return x, draw(st.integers(1, 5)), draw(st.sampled_from([1e-4, 0.5])), draw(st.sampled_from([0.75, 1.0])), \
        draw(st.sampled_from([1.0, 2.0]))


@settings(FUZZ, max_examples=18)
@given(case=lrn_case(), grad=st.booleans())
def test_local_response_norm(case, grad):
    x, size, alpha, beta, k = case
    check(lambda L, x: L.nn.functional.local_response_norm(x, size, alpha, beta, k), [x], grad=grad, scale_tol=TOL)
