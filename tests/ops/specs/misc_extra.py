"""Specs for shardflow/ops/misc_extra.py: integer math, frexp, trapezoid, windows, vander,
histogram, the *_scatter ops and the top-level in-place names."""

from shardflow.testing.opspec import Arg, OpSpec

N = Arg((3, 4))
NO_BF16 = ("float32", "float64")


def Int(lo, hi, shape=(3, 4)):
    return Arg(shape, kind="int", low=lo, high=hi, grad=False)


def _no_grad(name, fn, inputs, **kw):
    return OpSpec(name, fn, inputs, grad=False, fd=False, **kw)


SPECS = [
    _no_grad("gcd_lcm", lambda m, a, b: m.stack([m.gcd(a, b), m.lcm(a, b), (a * 1).gcd_(b), (a * 1).lcm_(b)]),
             [Int(-20, 20), Int(1, 15)]),
    _no_grad("bitwise_shifts", lambda m, a, b: m.bitwise_left_shift(a, b) + m.bitwise_right_shift(a * 16, b),
             [Int(0, 50), Int(0, 4)]),
    _no_grad("frexp", lambda m, a: m.stack([m.frexp(a * 100).mantissa, m.frexp(a * 100).exponent.to(a.dtype)]), [N],
             dtypes=NO_BF16, notes="torch has no bfloat16 frexp"),
    OpSpec("trapezoid", lambda m, y: m.trapezoid(y) + m.trapz(y, dx=0.5), [N]),
    OpSpec("trapezoid_x_dim", lambda m, y, x: m.trapezoid(y, x, dim=0), [Arg((4, 3)), Arg((4,))]),
    OpSpec("cumulative_trapezoid", lambda m, y: m.cumulative_trapezoid(y, dx=2.0, dim=1), [N]),
    _no_grad("windows", lambda m: m.cat([m.hann_window(6), m.hann_window(5, periodic=False), m.hamming_window(4),
                                         m.blackman_window(5), m.bartlett_window(5), m.kaiser_window(6, True, 8.0),
                                         m.hann_window(1), m.hamming_window(0)]), [], atol=1e-6),
    OpSpec("vander", lambda m, x: m.vander(x) + m.vander(x, increasing=True), [Arg((4,))], grad=False,
           notes="torch 2.13's vander backward fails (an in-place write in its own graph); finite differences check ours"),
    OpSpec("vander_n", lambda m, x: m.vander(x, N=2), [Arg((3,))], grad=False, notes="as vander"),
    _no_grad("histogram", lambda m, a: m.cat(list(m.histogram(a, bins=4))), [N]),
    _no_grad("histogram_range_weight", lambda m, a, w: m.histogram(a, bins=3, range=(-1.0, 1.0), weight=w,
                                                                   density=True).hist, [N, Arg((3, 4), kind="positive")]),
    OpSpec("select_scatter", lambda m, a, s: m.select_scatter(a, s, 1, 2), [N, Arg((3,))]),
    OpSpec("slice_scatter", lambda m, a, s: m.slice_scatter(a, s, 1, 0, 4, 2), [N, Arg((3, 2))]),
    OpSpec("diagonal_scatter", lambda m, a, s: m.diagonal_scatter(a, s, -1), [N, Arg((2,))]),
    OpSpec("diagonal_scatter_dims", lambda m, a, s: m.diagonal_scatter(a, s, 1, 0, 2), [Arg((3, 2, 4)), Arg((2, 3))]),
    OpSpec("inplace_trig_names", lambda m, a: m.acos_(a * 0.5) + m.asin_(a * 0.5) + m.atan_(a * 1)
           + (a * 0.5).arccos_() + (a * 0.5).arcsin_() + (a * 1).arctan_(), [Arg((3, 4), kind="uniform", low=-0.9,
                                                                                   high=0.9)], grad=False,
           notes="torch has no derivative for these in-place forms"),
    OpSpec("inplace_top_level", lambda m, a: m.neg_(a * 1) + m.negative_(a * 1) + m.reciprocal_(a * 1)
           + m.zero_(a * 1), [Arg((3, 4), kind="nonzero")]),
    OpSpec("detach_inplace", lambda m, a: a * m.detach_(a * 2), [N], fd=False,
           notes="detach_ cuts the graph on purpose"),
]
