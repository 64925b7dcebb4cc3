"""Specs for the ops added to close the torch-namespace gap (docs/COMPAT.md): extra
elementwise math and special functions (shardflow/ops/math_extra.py), reductions and scans
(reduce_extra.py), searching and counting (search.py)."""

from shardflow.testing.opspec import Arg, OpSpec

N = Arg((3, 4))
P = Arg((3, 4), kind="positive")
D = dict(distinct=True)
NO_BF16 = ("float32", "float64")
Q_NOTE = "torch's quantile refuses bfloat16"


def U(lo, hi, shape=(3, 4)):
    return Arg(shape, kind="uniform", low=lo, high=hi)


def Int(lo, hi, shape=(3, 4)):
    return Arg(shape, kind="int", low=lo, high=hi, grad=False)


def _no_grad(name, fn, inputs, **kw):
    return OpSpec(name, fn, inputs, grad=False, fd=False, **kw)


SPECS = [
    # ---------------------------------------------------------------- unary math
    OpSpec("acosh", lambda m, a: m.acosh(a), [U(1.2, 3)]),
    OpSpec("arccosh_method", lambda m, a: a.arccosh(), [U(1.2, 3)]),
    OpSpec("asinh", lambda m, a: m.asinh(a), [N]),
    OpSpec("arcsinh_method", lambda m, a: a.arcsinh(), [N]),
    OpSpec("atanh", lambda m, a: m.atanh(a), [U(-0.9, 0.9)]),
    OpSpec("arctanh", lambda m, a: m.arctanh(a), [U(-0.9, 0.9)]),
    OpSpec("acosh_inplace", lambda m, a: (a * 1 + 1.5).acosh_(), [P], grad=False,
           notes="torch has no derivative for acosh_; shardflow's is checked by finite differences"),
    OpSpec("deg2rad", lambda m, a: m.deg2rad(a * 90), [N]),
    OpSpec("rad2deg", lambda m, a: a.rad2deg(), [N]),
    OpSpec("sinc", lambda m, a: m.sinc(a), [N]),
    OpSpec("lgamma", lambda m, a: m.lgamma(a * 3), [N], dtype_tol={"bfloat16": (0.1, 0.05)},
           notes="lgamma's poles amplify bfloat16 input rounding"),
    OpSpec("lgamma_method", lambda m, a: a.lgamma(), [U(0.2, 9)]),
    OpSpec("digamma_small_positive", lambda m, a: m.digamma(a), [U(0.3, 7)]),
    OpSpec("digamma_negative", lambda m, a: a.digamma(), [U(-2.8, -2.2)], fd_atol=1e-4),
    OpSpec("erfinv_wide", lambda m, a: m.erfinv(a), [U(-0.95, 0.95)]),
    OpSpec("erfinv_method", lambda m, a: a.erfinv(), [U(-0.5, 0.5)]),
    OpSpec("logit", lambda m, a: m.logit(a), [U(0.05, 0.95)]),
    OpSpec("logit_eps", lambda m, a: m.logit(a, eps=0.2), [U(0.05, 0.95)], fd=False,
           notes="clamped inputs: zero gradient by definition (as PyTorch), not the finite difference"),
    OpSpec("logit_method", lambda m, a: a.logit(), [U(0.1, 0.9)]),
    _no_grad("signbit", lambda m, a: m.signbit(a), [N]),
    OpSpec("negative", lambda m, a: m.negative(a), [N]),
    OpSpec("positive", lambda m, a: m.positive(a) * 2, [N]),
    OpSpec("subtract_alias", lambda m, a, b: m.subtract(a, b, alpha=2), [N, N]),
    OpSpec("multiply_alias", lambda m, a, b: m.multiply(a, b), [N, N]),
    OpSpec("divide_alias", lambda m, a, b: m.divide(a, b), [N, P]),
    OpSpec("true_divide_alias", lambda m, a, b: m.true_divide(a, b), [N, P]),
    # ---------------------------------------------------------------- binary math
    OpSpec("atan2", lambda m, a, b: m.atan2(a, b), [N, Arg((4,))]),
    OpSpec("arctan2_method", lambda m, a, b: a.arctan2(b), [N, N]),
    OpSpec("hypot", lambda m, a, b: m.hypot(a, b), [N, Arg((1, 4))]),
    OpSpec("logaddexp", lambda m, a, b: m.logaddexp(a * 10, b), [N, N]),
    OpSpec("logaddexp2", lambda m, a, b: m.logaddexp2(a, b * 5), [N, N]),
    OpSpec("copysign", lambda m, a, b: m.copysign(a, b), [N, Arg((3, 4), kind="nonzero", grad=False)]),
    OpSpec("copysign_scalar", lambda m, a: m.copysign(a, -1.0), [Arg((3, 4), kind="nonzero")]),
    OpSpec("xlogy_positive_y", lambda m, a, b: m.xlogy(a, b), [N, P]),
    OpSpec("xlogy_zeros", lambda m, a, b: m.xlogy(a * (a > 0), b), [N, P], fd=False,
           notes="x == 0 entries: PyTorch's gradient (0 for x), not the finite difference at the kink"),
    _no_grad("heaviside", lambda m, a, b: m.heaviside(a * (a > 0.3), b), [N, Arg((4,))]),
    _no_grad("nextafter", lambda m, a, b: m.nextafter(a, b), [N, N], dtypes=NO_BF16,
             notes="torch has no bfloat16 nextafter"),
    OpSpec("float_power", lambda m, a, b: m.float_power(a, b), [P, N]),
    OpSpec("float_power_scalar", lambda m, a: a.float_power(2.5), [P]),
    OpSpec("ldexp", lambda m, a, b: m.ldexp(a, b.round()), [N, Arg((3, 4), kind="uniform", low=-3, high=3, grad=False)],
           notes="float exponents: torch's own ldexp gradient uses integer pow(2, other) for int exponents "
                 "(0 for negative ones)"),
    # ---------------------------------------------------------------- reductions and scans
    OpSpec("nansum", lambda m, a: m.nansum(m.where(a > 1, float("nan"), a), 1), [N], fd=False,
           notes="NaN entries are not differentiable (zero gradient, as PyTorch)"),
    OpSpec("nansum_all_method", lambda m, a: a.nansum(), [N]),
    OpSpec("nanmean", lambda m, a: m.nanmean(m.where(a > 1, float("nan"), a), 0, keepdim=True), [N], fd=False,
           notes="NaN entries are not differentiable (zero gradient, as PyTorch)"),
    OpSpec("nanmean_all", lambda m, a: a.nanmean(), [N]),
    OpSpec("cummax", lambda m, a: m.cummax(a, 1).values, [Arg((3, 5), **D)]),
    OpSpec("cummax_indices_ties", lambda m, a: m.cummax(a, 0).indices, [Int(-2, 3, (6, 3))], grad=False, fd=False),
    OpSpec("cummin", lambda m, a: a.cummin(0)[0], [Arg((4, 3), **D)]),
    OpSpec("cummin_indices", lambda m, a: m.cummin(a, -1).indices, [Int(-3, 3, (3, 6))], grad=False, fd=False),
    OpSpec("logcumsumexp", lambda m, a: m.logcumsumexp(a * 20, 1), [N]),
    OpSpec("logcumsumexp_method", lambda m, a: a.logcumsumexp(0), [Arg((5, 2))]),
    OpSpec("diff", lambda m, a: m.diff(a), [N]),
    OpSpec("diff_n_dim_prepend", lambda m, a, p: m.diff(a, 2, 0, prepend=p), [N, Arg((2, 4))]),
    OpSpec("diff_append_method", lambda m, a, p: a.diff(dim=1, append=p), [N, Arg((3, 1))]),
    OpSpec("trace", lambda m, a: m.trace(a), [Arg((4, 3))]),
    OpSpec("dist", lambda m, a, b: m.dist(a, b), [N, N]),
    OpSpec("dist_p3_method", lambda m, a, b: a.dist(b, 3), [N, Arg((4,))]),
    OpSpec("quantile", lambda m, a: m.quantile(a, 0.3, dim=1), [Arg((3, 6), **D)], dtypes=NO_BF16, notes=Q_NOTE),
    OpSpec("quantile_q_tensor_keepdim", lambda m, a: m.quantile(a, m.tensor([0.25, 0.5, 0.9], dtype=a.dtype), dim=0,
                                                               keepdim=True), [Arg((5, 3), **D)], dtypes=NO_BF16,
           notes=Q_NOTE),
    OpSpec("quantile_all_lower", lambda m, a: a.quantile(0.4, interpolation="lower"), [Arg((3, 4), **D)], dtypes=NO_BF16,
           notes=Q_NOTE),
    OpSpec("quantile_midpoint", lambda m, a: m.quantile(a, 0.35, 1, interpolation="midpoint"), [Arg((2, 5), **D)],
           dtypes=NO_BF16, notes=Q_NOTE),
    OpSpec("quantile_nearest_higher", lambda m, a: m.quantile(a, 0.5, 1, interpolation="nearest")
           + m.quantile(a, 0.5, 1, interpolation="higher"), [Arg((2, 5), **D)], dtypes=NO_BF16, notes=Q_NOTE),
    OpSpec("nanquantile", lambda m, a: m.nanquantile(m.where(a > 1, float("nan"), a), 0.6, dim=1), [Arg((3, 6), **D)],
           fd=False, dtypes=NO_BF16, notes="NaN entries are not differentiable; " + Q_NOTE),
    # ---------------------------------------------------------------- searching and counting
    _no_grad("searchsorted", lambda m, s, v: m.searchsorted(s.sort().values, v), [Arg((6,)), Arg((3, 4))]),
    _no_grad("searchsorted_rows_right", lambda m, s, v: m.searchsorted(s.sort(1).values, v, right=True),
             [Int(0, 6, (2, 5)), Int(0, 6, (2, 3))]),
    _no_grad("searchsorted_side_int32", lambda m, s, v: m.searchsorted(s, v, side="right", out_int32=True),
             [Arg((5,), kind="index", high=1), Int(-1, 2, (4,))]),
    _no_grad("searchsorted_sorter", lambda m, s, v: m.searchsorted(s, v, sorter=s.argsort()), [Arg((6,)), Arg((5,))]),
    _no_grad("bucketize", lambda m, a: m.bucketize(a, m.tensor([-1.0, 0.0, 0.5, 1.0], dtype=a.dtype)), [N]),
    _no_grad("bucketize_right", lambda m, a: m.bucketize(a, m.tensor([-2, 0, 1, 3]), right=True), [Int(-3, 4)]),
    _no_grad("unique", lambda m, a: m.unique(a, return_inverse=True, return_counts=True), [Int(-2, 3, (3, 5))]),
    _no_grad("unique_method_float", lambda m, a: a.round().unique(), [U(-2, 2, (4, 5))]),
    _no_grad("unique_dim", lambda m, a: m.unique(m.cat([a, a[:1]]), dim=0, return_inverse=True), [Int(0, 2, (4, 3))]),
    _no_grad("unique_consecutive", lambda m, a: m.unique_consecutive(a, return_inverse=True, return_counts=True),
             [Int(0, 2, (12,))]),
    _no_grad("unique_consecutive_dim", lambda m, a: a.repeat_interleave(2, 1).unique_consecutive(dim=1),
             [Int(0, 3, (2, 3))]),
    _no_grad("bincount", lambda m, a: m.bincount(a, minlength=8), [Arg((10,), kind="index", high=5)]),
    _no_grad("bincount_weights", lambda m, a, w: a.bincount(w), [Arg((6,), kind="index", high=4), Arg((6,))],
             dtypes=NO_BF16, notes="torch has no bfloat16 bincount"),
    _no_grad("histc", lambda m, a: m.histc(a, bins=5, min=-1, max=1), [N]),
    _no_grad("histc_range_of_data", lambda m, a: a.histc(4), [N], dtypes=NO_BF16,
             notes="bin edges from a bfloat16 range round differently in torch's kernel"),
    _no_grad("isin", lambda m, a, b: m.isin(a, b), [Int(0, 6, (3, 4)), Int(0, 6, (5,))]),
    _no_grad("isin_invert", lambda m, a: m.isin(a, m.tensor([1, 2]), invert=True), [Int(0, 4, (3, 4))]),
    # ---------------------------------------------------------------- in-place forms
    OpSpec("asinh_inplace", lambda m, a: (a * 1).asinh_(), [N], grad=False, notes="torch has no derivative for asinh_"),
    OpSpec("atanh_inplace", lambda m, a: (a * 0.5).arctanh_(), [N], grad=False, notes="torch has no derivative for atanh_"),
    OpSpec("arcsinh_inplace", lambda m, a: (a * 1).arcsinh_(), [N], grad=False, notes="torch has no derivative"),
    OpSpec("atan2_inplace", lambda m, a, b: (a * 1).atan2_(b), [N, N]),
    OpSpec("arctan2_inplace", lambda m, a, b: (a * 1).arctan2_(b), [N, N]),
    OpSpec("copysign_inplace", lambda m, a, b: (a * 1).copysign_(b), [Arg((3, 4), kind="nonzero"),
                                                                       Arg((3, 4), kind="nonzero", grad=False)]),
    OpSpec("deg2rad_rad2deg_inplace", lambda m, a: (a * 1).deg2rad_() + (a * 1).rad2deg_(), [N]),
    OpSpec("special_inplace", lambda m, a: (a * 1).lgamma_() + (a * 1).digamma_() + (a * 0.5).erfinv_(), [U(0.2, 1.5)]),
    OpSpec("hypot_inplace", lambda m, a, b: (a * 1).hypot_(b), [N, N]),
    OpSpec("logit_sinc_negative_inplace", lambda m, a: (a * 1).logit_() + (a * 1).sinc_() + (a * 1).negative_(),
           [U(0.1, 0.9)]),
    OpSpec("xlogy_inplace", lambda m, a, b: (a * 1).xlogy_(b), [N, P]),
]
