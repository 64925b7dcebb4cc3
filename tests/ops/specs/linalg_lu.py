"""Specs for the LU family (shardflow/ops/linalg_lu.py) and the general eigendecomposition
(linalg_eig.py) the Householder reflectors
(linalg_householder.py), LDL^T (linalg_ldl.py, symmetric inputs built as ``a + a^T``) and the
randomised low-rank SVD / PCA (linalg_lowrank.py): values, gradients against torch and
float64 finite differences, square, rectangular and batched. Random Gaussian matrices are
invertible with probability one and their partial pivoting has no ties, so LAPACK's pivots
(NumPy/SciPy's and torch's) agree; ``lu_solve`` gets a matrix with a larger diagonal so the
solve is well conditioned. ``eig`` is compared through functions that see neither the order
of the eigenvalues nor the phases of the eigenvectors (LAPACK's gauge): power sums of the
eigenvalues and ``sum_i |V_ki|^2 Re(L_i)`` per row, whose gradients exercise both backward
terms; the inputs have complex eigenvalue pairs. ``svd_lowrank`` / ``pca_lowrank`` draw a random
basis (torch's and shardflow's generators differ), so they get a matrix of rank at most ``q``
(built inside the spec as ``x @ y``), for which the singular values and ``U diag(S) V^T`` are
exact whatever the draw; their gradients depend on the draw (checked against finite differences
at a fixed seed in test_linalg_lu.py). float32 and float64 only: torch's CPU build has no bfloat16 LU.
"""

import torch

from shardflow.testing.opspec import Arg, OpSpec

NO_BF16 = ("float32", "float64")
NOTE = "torch's CPU linear algebra has no bfloat16 kernels"


def _la(name, fn, inputs, **kw):
    kw.setdefault("atol", 1e-4)
    kw.setdefault("rtol", 1e-3)
    kw.setdefault("notes", NOTE)
    return OpSpec(name, fn, inputs, dtypes=NO_BF16, **kw)


def L(m, name):
    """``torch.linalg.<name>``; shardflow's op ``linalg_<name>`` (``shardflow.linalg`` re-exports
    it, checked in test_linalg_lu.py), so that the op coverage check sees the spec call it."""
    return getattr(m.linalg, name) if m is torch else getattr(m, "linalg_" + name)


def _dominant(m, a):
    return a + 3 * m.eye(a.shape[-1], dtype=a.dtype)


def _lu_solve(m, a, b, **kw):
    lu, piv = L(m, "lu_factor")(_dominant(m, a))
    return L(m, "lu_solve")(lu, piv, b, **kw)


def _eig_summary(m, a):
    w, v = L(m, "eig")(a)  # (..., n), (..., n, n) complex
    return (v.abs() ** 2 * w.real.unsqueeze(-2)).sum(-1), (w * w).real.sum(-1), (w.imag ** 2).sum(-1)


def _eigvals_summary(m, a):
    w = L(m, "eigvals")(a)
    return (w * w * w).real.sum(-1), w.abs().sum(-1)


def _lowrank_summary(usv):
    u, s, v = usv
    return s, (u * s.unsqueeze(-2)) @ v.mT


SPECS = [
    _la("linalg_eig", _eig_summary, [Arg((4, 4))], seed=1),
    _la("linalg_eig_batched", _eig_summary, [Arg((2, 3, 3))], seed=2),
    _la("linalg_eigvals", _eigvals_summary, [Arg((2, 4, 4))], seed=3),
    _la("linalg_lu_factor_square", lambda m, a: L(m, "lu_factor")(a), [Arg((4, 4))]),
    _la("linalg_lu_factor_wide_batched", lambda m, a: L(m, "lu_factor")(a), [Arg((2, 3, 5))]),
    _la("linalg_lu_factor_tall", lambda m, a: L(m, "lu_factor")(a), [Arg((5, 3))]),
    _la("linalg_lu_factor_ex", lambda m, a: L(m, "lu_factor_ex")(a), [Arg((2, 3, 3))]),
    _la("linalg_lu_square_batched", lambda m, a: L(m, "lu")(a), [Arg((2, 3, 3))]),
    _la("linalg_lu_wide", lambda m, a: L(m, "lu")(a), [Arg((3, 4))]),
    _la("linalg_lu_tall", lambda m, a: L(m, "lu")(a), [Arg((4, 2))]),
    _la("lu_legacy_with_infos", lambda m, a: m.lu(a, get_infos=True), [Arg((3, 3))]),
    _la("lu_method", lambda m, a: a.lu(), [Arg((2, 3, 3))]),
    _la("lu_unpack", lambda m, a: m.lu_unpack(*L(m, "lu_factor")(a)), [Arg((4, 3))]),
    _la("lu_unpack_data_only", lambda m, a: m.lu_unpack(*L(m, "lu_factor")(a), unpack_pivots=False)[1:],
        [Arg((3, 4))]),
    _la("linalg_lu_solve", lambda m, a, b: _lu_solve(m, a, b), [Arg((3, 3)), Arg((3, 2))]),
    _la("linalg_lu_solve_adjoint_broadcast", lambda m, a, b: _lu_solve(m, a, b, adjoint=True),
        [Arg((2, 3, 3)), Arg((3, 2))]),
    _la("linalg_lu_solve_right", lambda m, a, b: _lu_solve(m, a, b, left=False), [Arg((3, 3)), Arg((2, 2, 3))]),
    _la("linalg_lu_solve_right_adjoint", lambda m, a, b: _lu_solve(m, a, b, left=False, adjoint=True),
        [Arg((2, 3, 3)), Arg((4, 3))]),
    _la("linalg_lu_solve_lu_leaf_adjoint", lambda m, lu, b: L(m, "lu_solve")(
        _dominant(m, lu), m.tensor([2, 3, 3], dtype=m.int32), b, adjoint=True), [Arg((3, 3)), Arg((3, 2))]),
    _la("lu_solve_legacy", lambda m, a, b: m.lu_solve(b, *L(m, "lu_factor")(_dominant(m, a))),
        [Arg((3, 3)), Arg((3, 1))]),
    _la("lu_solve_method", lambda m, a, b: b.lu_solve(*L(m, "lu_factor")(_dominant(m, a))),
        [Arg((2, 3, 3)), Arg((2, 3, 2))]),
    # ---------------------------------------------------------------- Householder
    _la("linalg_householder_product", lambda m, a, t: L(m, "householder_product")(a, t),
        [Arg((5, 3)), Arg((2,))]),
    _la("orgqr_batched", lambda m, a, t: m.orgqr(a, t), [Arg((2, 4, 4)), Arg((2, 4))]),
    _la("orgqr_method", lambda m, a, t: a.orgqr(t), [Arg((4, 2)), Arg((2,))]),
    _la("ormqr_left", lambda m, a, t, c: m.ormqr(a, t, c), [Arg((5, 3)), Arg((3,)), Arg((5, 2))]),
    _la("ormqr_right_transpose_method", lambda m, a, t, c: a.ormqr(t, c, left=False, transpose=True),
        [Arg((2, 4, 3)), Arg((2, 3)), Arg((2, 2, 4))]),
    OpSpec("geqrf", lambda m, a: m.geqrf(a), [Arg((2, 5, 3))], grad=False, fd=False, dtypes=NO_BF16,
           atol=1e-4, rtol=1e-3, notes=NOTE + "; geqrf has no derivative (torch raises too)"),
    OpSpec("geqrf_method_wide", lambda m, a: a.geqrf(), [Arg((3, 4))], grad=False, fd=False, dtypes=NO_BF16,
           atol=1e-4, rtol=1e-3, notes=NOTE + "; geqrf has no derivative (torch raises too)"),
    # ---------------------------------------------------------------- LDL (no derivative, as torch)
    OpSpec("linalg_ldl_factor", lambda m, a: L(m, "ldl_factor")(a + a.mT), [Arg((2, 4, 4))], grad=False, fd=False,
           dtypes=NO_BF16, atol=1e-4, rtol=1e-3, notes=NOTE + "; no derivative (torch has none)"),
    OpSpec("linalg_ldl_factor_ex_hermitian", lambda m, a: L(m, "ldl_factor_ex")(a + a.mT, hermitian=True),
           [Arg((3, 3))], grad=False, fd=False, dtypes=NO_BF16, atol=1e-4, rtol=1e-3,
           notes=NOTE + "; no derivative (torch has none)"),
    OpSpec("linalg_ldl_solve", lambda m, a, b: L(m, "ldl_solve")(*L(m, "ldl_factor")(_dominant(m, a + a.mT)), b),
           [Arg((2, 3, 3)), Arg((2, 3, 2))], grad=False, fd=False, dtypes=NO_BF16, atol=1e-4, rtol=1e-3,
           notes=NOTE + "; no derivative (torch has none)"),
    # ---------------------------------------------------------------- randomised low rank
    OpSpec("svd_lowrank_rank_q", lambda m, x, y: _lowrank_summary(m.svd_lowrank(x @ y, q=2)),
           [Arg((2, 6, 2)), Arg((2, 2, 4))], grad=False, fd=False, dtypes=NO_BF16, atol=1e-4, rtol=1e-3,
           notes=NOTE + "; random basis: exact only for rank <= q, gradients depend on the draw"),
    OpSpec("svd_lowrank_wide_with_m", lambda m, x, y, c: _lowrank_summary(m.svd_lowrank(x @ y + c, q=3, M=c)),
           [Arg((3, 2)), Arg((2, 5)), Arg((1, 5))], grad=False, fd=False, dtypes=NO_BF16, atol=1e-4,
           rtol=1e-3, notes=NOTE + "; random basis: exact only for rank <= q, gradients depend on the draw"),
    OpSpec("pca_lowrank", lambda m, x, y, c: _lowrank_summary(m.pca_lowrank(x @ y + c, q=3)),
           [Arg((7, 2)), Arg((2, 4)), Arg((1, 4))], grad=False, fd=False, dtypes=NO_BF16, atol=1e-4,
           rtol=1e-3, notes=NOTE + "; random basis: exact only for rank <= q, gradients depend on the draw"),
]
