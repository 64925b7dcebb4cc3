"""Specs for the gamma-family special functions (``shardflow/ops/special_functions.py``) and
the Cholesky / triangular-solve family (``shardflow/ops/cholesky.py``).

Inputs stay away from poles (lgamma/digamma at non-positive integers) and from the edges of
erfinv's domain. Matrix inputs are built inside the spec as ``A A^T + 3 I`` so that they are
symmetric positive-definite whatever the random ``A`` (and the finite differences perturb a
matrix that stays so); the triangular solves read a triangle of a random matrix whose
diagonal is pushed away from zero. The linear-algebra specs run in float32 and float64 only:
torch's CPU build has no bfloat16 Cholesky or triangular solve (shardflow refuses it too,
tests/ops/test_special_linalg_misc.py).
"""

import torch

from shardflow.testing.opspec import Arg, OpSpec

NO_BF16 = ("float32", "float64")


def U(lo, hi, shape=(3, 4)):
    return Arg(shape, kind="uniform", low=lo, high=hi)


def linalg(m, name):
    """``torch.linalg.<name>``; shardflow's op of that name (``shardflow.linalg`` re-exports it
    as the same function, checked in test_special_linalg_misc.py)."""
    return getattr(m.linalg, name) if m is torch else getattr(m, "linalg_" + name)


def spd(m, a):
    n = a.shape[-1]
    return a @ a.mT + 3 * m.eye(n, dtype=a.dtype)


def lower(m, a):
    n = a.shape[-1]
    return a.tril() + 3 * m.eye(n, dtype=a.dtype)


SPECS = [
    OpSpec("lgamma_positive", lambda m, a: m.lgamma(a), [U(0.1, 6.0)]),
    OpSpec("lgamma_negative_noninteger", lambda m, a: a.lgamma(), [U(-2.9, -2.1)]),
    OpSpec("lgamma_inplace_graph", lambda m, a: (a * 1).lgamma_(), [U(0.5, 3.0)]),
    OpSpec("lgamma_int", lambda m, a: m.lgamma(a), [Arg((5,), kind="int", low=1, high=9)], grad=False, fd=False),
    OpSpec("digamma", lambda m, a: m.digamma(a), [U(0.1, 12.0)]),
    OpSpec("digamma_negative_noninteger", lambda m, a: a.digamma(), [U(-1.9, -1.1)]),
    OpSpec("digamma_inplace_graph", lambda m, a: (a * 1).digamma_(), [U(0.5, 3.0)]),
    OpSpec("polygamma_1", lambda m, a: m.polygamma(1, a), [U(0.2, 8.0)]),
    OpSpec("polygamma_2_method", lambda m, a: a.polygamma(2), [U(0.5, 8.0)]),
    OpSpec("mvlgamma_p3", lambda m, a: m.mvlgamma(a, 3), [U(1.5, 5.0)]),
    OpSpec("erfinv", lambda m, a: m.erfinv(a), [U(-0.95, 0.95)]),
    OpSpec("erfinv_inplace_graph", lambda m, a: (a * 1).erfinv_(), [U(-0.9, 0.9)]),
    OpSpec("xlogy", lambda m, a, b: m.xlogy(a, b), [Arg((3, 4)), Arg((3, 4), kind="positive")]),
    OpSpec("xlogy_zero_x_broadcast", lambda m, a, b: m.xlogy(m.relu(a), b), [Arg((3, 4)), Arg((4,), kind="positive")]),
    OpSpec("xlogy_scalar_other", lambda m, a: m.xlogy(a, 2.5), [Arg((3, 4))]),
    # Cholesky: the gradient is PyTorch's (not symmetrised), checked through an SPD input
    OpSpec("linalg_cholesky", lambda m, a: linalg(m, "cholesky")(spd(m, a)), [Arg((4, 4))], dtypes=NO_BF16),
    OpSpec("linalg_cholesky_upper_batched", lambda m, a: linalg(m, "cholesky")(spd(m, a), upper=True), [Arg((2, 3, 3))], dtypes=NO_BF16),
    OpSpec("cholesky_legacy", lambda m, a: m.cholesky(spd(m, a)), [Arg((3, 3))], dtypes=NO_BF16),
    OpSpec("solve_triangular_lower_left", lambda m, a, b: linalg(m, "solve_triangular")(lower(m, a), b, upper=False), [Arg((3, 3)), Arg((3, 2))], dtypes=NO_BF16),
    OpSpec("solve_triangular_reads_one_triangle", lambda m, a, b: linalg(m, "solve_triangular")(a + 3 * m.eye(3), b, upper=True), [Arg((3, 3)), Arg((3, 4))], dtypes=NO_BF16),
    OpSpec("solve_triangular_right_unit", lambda m, a, b: linalg(m, "solve_triangular")(a, b, upper=False, left=False, unitriangular=True), [Arg((3, 3)), Arg((2, 3))], dtypes=NO_BF16),
    OpSpec("solve_triangular_batch_broadcast", lambda m, a, b: linalg(m, "solve_triangular")(lower(m, a), b, upper=False), [Arg((3, 3)), Arg((2, 3, 2))], dtypes=NO_BF16),
    OpSpec("cholesky_solve", lambda m, a, b: m.cholesky_solve(b, linalg(m, "cholesky")(spd(m, a))), [Arg((3, 3)), Arg((3, 2))], dtypes=NO_BF16),
    OpSpec("cholesky_solve_upper", lambda m, a, b: m.cholesky_solve(b, linalg(m, "cholesky")(spd(m, a), upper=True), upper=True), [Arg((3, 3)), Arg((3, 2))], dtypes=NO_BF16),
    OpSpec("cholesky_inverse", lambda m, a: m.cholesky_inverse(linalg(m, "cholesky")(spd(m, a))), [Arg((3, 3))], dtypes=NO_BF16),
]
