"""Differential fuzzing of sort / search ops against PyTorch (see ``_diff.py``): sort
(stable, descending), argsort, topk (largest/smallest), kthvalue, msort, unique (sorted,
return_inverse, return_counts, dim), unique_consecutive, searchsorted (right, side, sorter),
bucketize, with ties, NaN, -0.0, empty and 0-d inputs. Indices of tied elements are
compared exactly where torch defines them (stable sort; for unstable sort, topk and
kthvalue only the values, plus that the indices pick those values)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ._diff import FLOATS, FUZZ, INTS, check, dim_of, inp

ALL = FLOATS + INTS + ("bool",)


def _gathered(L, x, vals, idx, d):
    """(values, the input at the indices) - a check that does not depend on tie order."""
    if x.ndim == 0:
        return vals, x
    return vals, L.gather(x, d, idx)


SORTS = {
    "sort_stable": lambda L, x, d, k: L.sort(x, d, descending=k, stable=True),
    "sort": lambda L, x, d, k: _gathered(L, x, *L.sort(x, d, descending=k), d),
    "argsort_stable": lambda L, x, d, k: L.argsort(x, dim=d, descending=k, stable=True),
    "topk": lambda L, x, d, k: _gathered(L, x, *L.topk(x, min(2, x.shape[d] if x.ndim else 1), d, largest=k), d),
    "topk_sorted_vals": lambda L, x, d, k: L.topk(x, min(3, x.shape[d] if x.ndim else 1), d, largest=k)[0],
    "kthvalue": lambda L, x, d, k: L.kthvalue(x, 1, d, keepdim=k)[0],
    "kthvalue2": lambda L, x, d, k: L.kthvalue(x, 2, d)[0],
    "msort": lambda L, x, d, k: L.msort(x),
    "cummax_vals": lambda L, x, d, k: L.cummax(x, d)[0],
}
def _rebuilt(values, inverse, *counts):
    return (values, values[inverse]) + counts


UNIQUE = {
    # with NaN, which NaN slot an inverse index names follows torch's unstable sort: compare
    # values[inverse] (the input rebuilt), not the indices
    "unique": lambda L, x: L.unique(x), "unique_inv": lambda L, x: _rebuilt(*L.unique(x, return_inverse=True)),
    "unique_counts": lambda L, x: _rebuilt(*L.unique(x, return_inverse=True, return_counts=True)),
    "unique_dim0": lambda L, x: L.unique(x, dim=0, return_inverse=True, return_counts=True),
    "unique_consecutive": lambda L, x: L.unique_consecutive(x, return_inverse=True, return_counts=True),
    "unique_consecutive_dim": lambda L, x: L.unique_consecutive(x, dim=-1, return_counts=True),
    "unique_sorted_false_sorted": lambda L, x: L.unique(x, sorted=False).sort()[0],
}


@st.composite
def tie_inp(draw, dtypes=ALL):
    x = draw(inp(dtypes=dtypes, specials=draw(st.booleans())))
    if draw(st.booleans()) and x.values.dtype.kind == "f":
        x.values = np.where(np.isnan(x.values), x.values, x.values.round(0) % 3).astype(x.values.dtype)
    return x


@FUZZ
@given(name=st.sampled_from(sorted(SORTS)), x=tie_inp(), data=st.data(), flag=st.booleans(), grad=st.booleans())
def test_sort_family(name, x, data, flag, grad):
    d = data.draw(dim_of(x.values.ndim))
    check(lambda L, t: SORTS[name](L, t, d, flag), [x], grad=grad)


@FUZZ
@given(name=st.sampled_from(sorted(UNIQUE)), x=tie_inp(dtypes=FLOATS[:2] + INTS[:2] + ("bool",)))
def test_unique_family(name, x):
    check(UNIQUE[name], [x])


@FUZZ
@given(x=inp(dtypes=("float32", "int64"), max_ndim=2, specials=False), v=inp(dtypes=("float32", "int64"), max_ndim=2),
       right=st.booleans(), bucket=st.booleans())
def test_searchsorted_bucketize(x, v, right, bucket):
    if x.values.ndim:
        x.values.sort(axis=-1)
    if bucket:
        b = x.values.reshape(-1)
        b.sort()
        from ._diff import Inp
        check(lambda L, s, t: L.bucketize(t, s, right=right), [Inp(b), v])
    else:
        check(lambda L, s, t: L.searchsorted(s, t, right=right), [x, v])
