"""Differential fuzzing of reductions against PyTorch (see ``_diff.py``): sum, mean, prod,
amax/amin, max/min/argmax/argmin (with ties and NaN), std/var (correction), norm,
logsumexp, all/any, cumsum/cumprod/cummax/cummin, softmax/log_softmax, with dim (negative,
tuples), keepdim and dtype, on empty, 0-d and non-contiguous inputs; backward for the
differentiable ones. Float sums differ from torch's by summation order (torch's vectorised
CPU reduction adds in another order): compared at a tolerance scaled to the output."""

from hypothesis import given
from hypothesis import strategies as st

from ._diff import FLOATS, FUZZ, INTS, check, dim_of, inp

ALL = FLOATS + INTS + ("bool",)

DIM_REDUCE = {
    "sum": lambda L, x, d, k: L.sum(x, d, keepdim=k), "mean": lambda L, x, d, k: L.mean(x, d, keepdim=k),
    "prod": lambda L, x, d, k: L.prod(x, d, keepdim=k), "amax": lambda L, x, d, k: L.amax(x, d, keepdim=k),
    "amin": lambda L, x, d, k: L.amin(x, d, keepdim=k), "max": lambda L, x, d, k: L.max(x, d, keepdim=k),
    "min": lambda L, x, d, k: L.min(x, d, keepdim=k), "argmax": lambda L, x, d, k: L.argmax(x, d, keepdim=k),
    "argmin": lambda L, x, d, k: L.argmin(x, d, keepdim=k), "std": lambda L, x, d, k: L.std(x, d, keepdim=k),
    "var": lambda L, x, d, k: L.var(x, d, keepdim=k, correction=0),
    "var1": lambda L, x, d, k: x.var(d, keepdim=k), "norm": lambda L, x, d, k: L.norm(x, dim=d, keepdim=k),
    "norm1": lambda L, x, d, k: L.norm(x, p=1, dim=d, keepdim=k),
    "norminf": lambda L, x, d, k: L.linalg.vector_norm(x, float("inf"), dim=d, keepdim=k),
    "logsumexp": lambda L, x, d, k: L.logsumexp(x, d, keepdim=k), "all": lambda L, x, d, k: L.all(x, d, keepdim=k),
    "any": lambda L, x, d, k: L.any(x, d, keepdim=k), "cumsum": lambda L, x, d, k: L.cumsum(x, d),
    "cumprod": lambda L, x, d, k: L.cumprod(x, d), "cummax": lambda L, x, d, k: L.cummax(x, d),
    "cummin": lambda L, x, d, k: L.cummin(x, d), "softmax": lambda L, x, d, k: L.softmax(x, d),
    "log_softmax": lambda L, x, d, k: L.log_softmax(x, d), "nansum": lambda L, x, d, k: L.nansum(x, d, keepdim=k),
    "nanmean": lambda L, x, d, k: L.nanmean(x, d, keepdim=k), "count_nonzero": lambda L, x, d, k: L.count_nonzero(x, d),
    "sum_f64": lambda L, x, d, k: L.sum(x, d, keepdim=k, dtype=L.float64),
    "cumsum_i64": lambda L, x, d, k: L.cumsum(x, d, dtype=L.int64),
    "median": lambda L, x, d, k: L.median(x, d, keepdim=k), "mode": lambda L, x, d, k: L.mode(x, d, keepdim=k),
    "nanmedian": lambda L, x, d, k: L.nanmedian(x, d, keepdim=k),
    "aminmax": lambda L, x, d, k: L.aminmax(x, dim=d, keepdim=k),
    "std_mean": lambda L, x, d, k: L.std_mean(x, d, keepdim=k),
}
FULL_REDUCE = {
    "sum": lambda L, x: L.sum(x), "mean": lambda L, x: L.mean(x), "prod": lambda L, x: L.prod(x),
    "max": lambda L, x: L.max(x), "min": lambda L, x: L.min(x), "argmax": lambda L, x: L.argmax(x),
    "argmin": lambda L, x: L.argmin(x), "std": lambda L, x: L.std(x), "var": lambda L, x: L.var(x),
    "norm": lambda L, x: L.norm(x), "all": lambda L, x: L.all(x), "any": lambda L, x: L.any(x),
    "median": lambda L, x: L.median(x), "logsumexp_all": lambda L, x: L.logsumexp(x, tuple(range(x.ndim))),
    "sum_dims": lambda L, x: L.sum(x, tuple(range(0, x.ndim, 2))),
    "mean_neg": lambda L, x: L.mean(x, (-1,) if x.ndim else ()), "amax_all": lambda L, x: L.amax(x, ()),
    "sum_empty_dims": lambda L, x: L.sum(x, []), "nansum": lambda L, x: L.nansum(x),
    "count_nonzero": lambda L, x: L.count_nonzero(x), "sum_int_dtype": lambda L, x: L.sum(x, dtype=L.int32),
    "var_mean": lambda L, x: L.var_mean(x, correction=0), "softmax_f64": lambda L, x: L.softmax(x, -1, dtype=L.float64),
}
DIFF = {"sum", "mean", "prod", "amax", "amin", "max", "min", "std", "var", "var1", "norm", "norm1", "norminf",
        "logsumexp", "cumsum", "cumprod", "cummax", "cummin", "softmax", "log_softmax", "nansum", "nanmean",
        "sum_f64", "median", "logsumexp_all", "sum_dims", "mean_neg", "amax_all", "std_mean", "var_mean",
        "softmax_f64", "sum_empty_dims", "aminmax", "mode", "nanmedian"}


@st.composite
def tie_inp(draw, dtypes=ALL):
    """Inputs with ties: few distinct values, sometimes NaN."""
    x = draw(inp(dtypes=dtypes, specials=draw(st.booleans())))
    if draw(st.booleans()) and x.values.dtype.kind == "f":
        x.values = (x.values.round(0) % 3).astype(x.values.dtype)
    return x


@FUZZ
@given(name=st.sampled_from(sorted(DIM_REDUCE)), x=tie_inp(), data=st.data(), keepdim=st.booleans(),
       grad=st.booleans())
def test_reduce_dim(name, x, data, keepdim, grad):
    d = data.draw(dim_of(x.values.ndim))
    check(lambda L, t: DIM_REDUCE[name](L, t, d, keepdim), [x], grad=grad and name in DIFF, scale_tol=4)


@FUZZ
@given(name=st.sampled_from(sorted(FULL_REDUCE)), x=tie_inp(), grad=st.booleans())
def test_reduce_full(name, x, grad):
    check(FULL_REDUCE[name], [x], grad=grad and name in DIFF, scale_tol=4)
