"""Specs for the special functions built with torch.distributions: the regularised
incomplete gamma functions (``ops/incomplete_gamma.py``; torch has no derivative in ``a``, so
``a`` does not require grad here -- tests/distributions/test_incomplete_gamma.py checks the
error) and the modified Bessel functions (``ops/bessel.py``). The random ``poisson`` /
``binomial`` are on test_op_coverage's CHECKED_ELSEWHERE list."""

from shardflow.testing.opspec import Arg, OpSpec


def U(lo, hi, shape=(3, 4), grad=True):
    return Arg(shape, kind="uniform", low=lo, high=hi, grad=grad)


SPECS = [
    OpSpec("igamma", lambda m, a, x: m.igamma(a, x), [U(0.3, 6.0, grad=False), U(0.05, 9.0)]),
    OpSpec("igammac_broadcast", lambda m, a, x: m.igammac(a, x), [U(0.5, 30.0, (4,), grad=False), U(0.1, 40.0)]),
    OpSpec("special_gammainc_method", lambda m, a, x: m.special.gammainc(a, x) + a.igamma(x),
           [U(1.0, 4.0, grad=False), U(0.2, 6.0)]),
    OpSpec("special_gammaincc", lambda m, a, x: m.special.gammaincc(a, x), [U(0.2, 3.0, grad=False), U(0.1, 8.0)]),
    OpSpec("i0", lambda m, a: m.i0(a), [U(-6.0, 6.0)]),
    # both branches (|x| <= 20 and above); the outputs reach 1e10, too large for the float64
    # finite differences of a summed output, so the gradient is compared with torch's only
    OpSpec("i0_wide", lambda m, a: m.i0(a), [U(-25.0, 25.0)], rtol=2e-4, fd=False),
    OpSpec("i0_method_inplace_graph", lambda m, a: (a * 1).i0_() + a.i0(), [U(-3.0, 3.0)]),
    # torch has no bfloat16 backward for i1 ("i1_backward" not implemented for 'BFloat16')
    OpSpec("special_i1", lambda m, a: m.special.i1(a), [U(-6.0, 6.0)], dtypes=("float32", "float64"),
           notes="torch's CPU build has no bfloat16 i1 backward"),
    OpSpec("special_i1_wide", lambda m, a: m.special.i1(a), [U(-25.0, 25.0)], rtol=2e-4, fd=False,
           dtypes=("float32", "float64"), notes="torch's CPU build has no bfloat16 i1 backward"),
]
