"""Differential fuzzing of indexing against PyTorch (see ``_diff.py``): basic indexing
(ints, negative ints, slices with steps, None, Ellipsis), advanced indexing (integer lists
and tensors with negative and out-of-range entries, bool masks, mixed with slices),
``__setitem__`` with broadcasting values, index_select, gather, scatter / scatter_add /
scatter_reduce, index_add / index_copy / index_fill, masked_fill / masked_select,
take, put_, nonzero, one_hot; in-place results and the input after the call are compared,
and backward for float inputs."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ._diff import FLOATS, FUZZ, INTS, Inp, check, dim_of, inp

ALL = FLOATS + INTS + ("bool",)


@st.composite
def index_item(draw, n):
    """One index entry for a dim of size ``n``."""
    kind = draw(st.sampled_from(["int", "slice", "slice", "none", "list", "tensor", "bool"]))
    if kind == "int":
        return draw(st.integers(-n - 1, n))
    if kind == "slice":
        a = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        b = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
        return slice(a, b, draw(st.sampled_from([None, 1, 2, 3])))
    if kind == "none":
        return None
    if kind == "list":
        return draw(st.lists(st.integers(-n - 1, n), max_size=3))
    if kind == "tensor":
        return ("T", np.array(draw(st.lists(st.integers(-n, max(n - 1, -n)), min_size=0, max_size=3)), np.int64))
    return ("T", np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), np.bool_))


@st.composite
def index_case(draw):
    x = draw(inp(dtypes=ALL, min_ndim=1))
    shape = x.values.shape
    items = [draw(index_item(shape[k])) for k in range(draw(st.integers(1, len(shape))))]
    if draw(st.integers(0, 3)) == 0:
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return x, items


def _idx(L, items):
    out = []
    for it in items:
        if isinstance(it, tuple):
            out.append(L.tensor(it[1]))
        else:
            out.append(it)
    return tuple(out)


@FUZZ
@given(case=index_case(), grad=st.booleans())
def test_getitem(case, grad):
    x, items = case
    check(lambda L, t: t[_idx(L, items)], [x], grad=grad)


@FUZZ
@given(case=index_case(), data=st.data(), scalar=st.booleans())
def test_setitem(case, data, scalar):
    x, items = case

    def f(L, t, *v):
        y = t.clone() if t.stride() and 0 in t.stride() else t  # an expanded view refuses writes in both
        y[_idx(L, items)] = v[0] if v else 7
        return y

    if scalar:
        check(f, [x])
        return
    # a value of the indexed result's shape (or a broadcastable suffix of it), any dtype
    import torch
    try:
        shape = tuple(torch.zeros(x.values.shape)[_idx(torch, items)].shape)
    except (IndexError, RuntimeError, TypeError, ValueError):
        shape = ()
    shape = shape[data.draw(st.integers(0, len(shape))):]
    v = data.draw(inp(shape=shape, dtypes=(str(x.values.dtype) if str(x.values.dtype) in ALL else "bfloat16",)))
    check(f, [x, v])


@st.composite
def gather_case(draw):
    x = draw(inp(dtypes=ALL, min_ndim=1))
    d = draw(dim_of(x.values.ndim))
    n = x.values.shape[d]
    ishape = tuple(draw(st.integers(0, s)) for s in x.values.shape)
    idx = draw(st.lists(st.integers(-n if draw(st.integers(0, 6)) == 0 else 0, max(n - 1, 0)),
                        min_size=int(np.prod(ishape)), max_size=int(np.prod(ishape))))
    if n == 0:
        idx = [0] * len(idx)
    return x, d, Inp(np.array(idx, np.int64).reshape(ishape), draw(st.sampled_from(["contig", "step"])))


GATHER_OPS = {
    "gather": lambda L, x, d, i, s: L.gather(x, d, i),
    "scatter": lambda L, x, d, i, s: L.scatter(x, d, i, s[tuple(slice(0, n) for n in i.shape)]),
    "scatter_value": lambda L, x, d, i, s: L.scatter(x, d, i, 2),
    "scatter_add": lambda L, x, d, i, s: L.scatter_add(x, d, i, s[tuple(slice(0, n) for n in i.shape)]),
    "scatter_reduce_sum": lambda L, x, d, i, s: L.scatter_reduce(x, d, i, s[tuple(slice(0, n) for n in i.shape)], "sum"),
    "scatter_reduce_amax": lambda L, x, d, i, s: L.scatter_reduce(x, d, i, s[tuple(slice(0, n) for n in i.shape)],
                                                                  "amax", include_self=False),
    "scatter_reduce_mean": lambda L, x, d, i, s: L.scatter_reduce(x, d, i, s[tuple(slice(0, n) for n in i.shape)],
                                                                  "mean"),
    "scatter_reduce_prod": lambda L, x, d, i, s: L.scatter_reduce(x, d, i, s[tuple(slice(0, n) for n in i.shape)],
                                                                  "prod", include_self=False),
    "scatter_add_": lambda L, x, d, i, s: x.detach().clone().scatter_add_(d, i, s[tuple(slice(0, n) for n in i.shape)]),
    "index_select": lambda L, x, d, i, s: L.index_select(x, d, i.reshape(-1)),
    "index_add": lambda L, x, d, i, s: L.index_add(x, d, i.reshape(-1)[:1], s.narrow(d, 0, 1) if i.numel() else
                                                   s.narrow(d, 0, 0), alpha=2),
    "index_fill": lambda L, x, d, i, s: L.index_fill(x, d, i.reshape(-1), -1),
    "index_copy": lambda L, x, d, i, s: L.index_copy(x, d, i.reshape(-1)[:1], s.narrow(d, 0, min(1, i.numel()))),
    "take": lambda L, x, d, i, s: L.take(x, i),
    "take_along_dim": lambda L, x, d, i, s: L.take_along_dim(x, i, d),
    "put_": lambda L, x, d, i, s: x.detach().clone().put_(i, s.reshape(-1)[:i.numel()].reshape(i.shape)),
    "put_acc": lambda L, x, d, i, s: x.detach().clone().put_(i, s.reshape(-1)[:i.numel()].reshape(i.shape),
                                                             accumulate=True),
}


@FUZZ
@given(name=st.sampled_from(sorted(GATHER_OPS)), case=gather_case(), grad=st.booleans())
def test_gather_scatter(name, case, grad):
    x, d, i = case
    src = Inp(x.values[::-1].copy() + (1 if x.values.dtype != np.bool_ else False))
    check(lambda L, t, j, s: GATHER_OPS[name](L, t, d, j, s), [x, i, src], grad=grad)


MASK_OPS = {
    "masked_fill": lambda L, x, m: x.masked_fill(m, -3), "masked_fill_": lambda L, x, m: x.detach().masked_fill_(m, 5),
    "masked_select": lambda L, x, m: L.masked_select(x, m), "nonzero": lambda L, x, m: L.nonzero(m),
    "nonzero_tuple": lambda L, x, m: L.nonzero(x, as_tuple=True), "argwhere": lambda L, x, m: L.argwhere(x),
    "where1": lambda L, x, m: L.where(m), "bool_index": lambda L, x, m: x[m] if m.shape == x.shape else x[m[..., 0]]
    if m.ndim else x[m],
    "masked_scatter": lambda L, x, m: x.masked_scatter(m, x.flip(0) if x.ndim else x),
    "masked_fill_tensor": lambda L, x, m: x.masked_fill(m, L.tensor(2.0)),
}


@FUZZ
@given(name=st.sampled_from(sorted(MASK_OPS)), x=inp(dtypes=ALL), data=st.data(), grad=st.booleans())
def test_mask_ops(name, x, data, grad):
    shape = x.values.shape
    mshape = shape[data.draw(st.integers(0, len(shape))):]
    m = data.draw(inp(shape=mshape, dtypes=("bool",)))
    check(MASK_OPS[name], [x, m], grad=grad)


@FUZZ
@given(x=inp(dtypes=("int64",), specials=False), n=st.sampled_from([-1, 3, 6]))
def test_one_hot(x, n):
    x.values[...] = np.abs(x.values) % 7
    check(lambda L, t: L.nn.functional.one_hot(t, n), [x])
