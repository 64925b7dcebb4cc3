"""Specs for the decompositions and what rests on them (shardflow/ops/decompositions.py,
linalg_derived.py, the singular-value norms of _linalg_names.py).

Gauge: a column of Q, an eigenvector or a singular pair may flip sign between LAPACK builds
(NumPy's, torch's, cuSOLVER), so the specs compare functions that do not see the sign, as
torch's own tests do: Q and R with R's diagonal made positive, ``|V|`` with the eigenvalues,
``|U|``, ``S``, ``|Vh|``. Their gradients for random cotangents then check every term of the
backward formulas (the eigenvector and singular-vector terms included). Symmetric inputs are
built as ``a + a^T`` inside the spec so that the finite differences perturb a matrix that stays
symmetric (``eigh`` reads one triangle; torch's gradient is the symmetric one). Random
Gaussian matrices have distinct eigen/singular values with probability one; the seeds used
keep the gaps moderate. float32 and float64 only: torch's CPU build has no bfloat16
decompositions.
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
    it as the same function, checked in test_linalg_decompositions.py), so that the op
    coverage check sees the spec call it."""
    return getattr(m.linalg, name) if m is torch else getattr(m, "linalg_" + name)


def _positive_r(q, r):
    """(Q, R) with R's diagonal made positive: the QR factors free of the sign gauge."""
    k = min(r.shape[-2], r.shape[-1])
    sign = r[..., :k, :k].diagonal(0, -2, -1).sign()
    return q[..., :, :k] * sign.unsqueeze(-2), r[..., :k, :] * sign.unsqueeze(-1)


def _abs_eigh(m, a, **kw):
    w, v = L(m, "eigh")(a + a.mT, **kw)
    return w, v.abs()


def _abs_svd(m, a, **kw):
    u, s, vh = L(m, "svd")(a, **kw)
    k = s.shape[-1]
    return u[..., :k].abs(), s, vh[..., :k, :].abs()


def _spd(m, a):
    return a @ a.mT + 3 * m.eye(a.shape[-1], dtype=a.dtype)


SPECS = [
    # ---------------------------------------------------------------- QR
    _la("linalg_qr_tall", lambda m, a: _positive_r(*L(m, "qr")(a)), [Arg((5, 3))]),
    _la("linalg_qr_wide_batched", lambda m, a: _positive_r(*L(m, "qr")(a)), [Arg((2, 3, 5))]),
    _la("linalg_qr_complete_square", lambda m, a: _positive_r(*L(m, "qr")(a, mode="complete")), [Arg((4, 4))]),
    OpSpec("linalg_qr_mode_r", lambda m, a: L(m, "qr")(a, mode="r")[1].abs(), [Arg((5, 3))], grad=False, fd=False,
           dtypes=NO_BF16, notes=NOTE + "; mode='r' is not differentiable (torch raises too)"),
    _la("qr_legacy_some", lambda m, a: _positive_r(*m.qr(a)), [Arg((4, 3))]),
    _la("qr_method_not_some", lambda m, a: _positive_r(*a.qr(some=False)), [Arg((3, 4))]),
    # ---------------------------------------------------------------- eigh
    _la("linalg_eigh", lambda m, a: _abs_eigh(m, a), [Arg((4, 4))]),
    _la("linalg_eigh_batched_upper", lambda m, a: _abs_eigh(m, a, UPLO="U"), [Arg((2, 3, 3))]),
    _la("linalg_eigvalsh", lambda m, a: L(m, "eigvalsh")(a + a.mT), [Arg((2, 4, 4))]),
    _la("linalg_eigvalsh_upper_reads_triangle", lambda m, a: L(m, "eigvalsh")(a, UPLO="U"), [Arg((3, 3))],
        grad=False, fd=False),
    # ---------------------------------------------------------------- SVD
    _la("linalg_svd_tall", lambda m, a: _abs_svd(m, a, full_matrices=False), [Arg((5, 3))]),
    _la("linalg_svd_wide_batched", lambda m, a: _abs_svd(m, a, full_matrices=False), [Arg((2, 3, 4))]),
    _la("linalg_svd_square_full", lambda m, a: _abs_svd(m, a), [Arg((3, 3))]),
    _la("linalg_svd_full_matrices_tall", lambda m, a: _abs_svd(m, a), [Arg((4, 3))]),
    _la("linalg_svdvals", lambda m, a: L(m, "svdvals")(a), [Arg((2, 3, 5))]),
    _la("svd_legacy_V", lambda m, a: tuple(t.abs() for t in m.svd(a)), [Arg((4, 3))]),
    _la("svd_method_wide", lambda m, a: tuple(t.abs() for t in a.svd()), [Arg((3, 4))]),
    OpSpec("svd_compute_uv_false", lambda m, a: tuple(m.svd(a, compute_uv=False)), [Arg((4, 3))], dtypes=NO_BF16,
           notes=NOTE, atol=1e-4, rtol=1e-3),
    # ---------------------------------------------------------------- norms built on svdvals
    _la("linalg_matrix_norm_nuc_2_neg2", lambda m, a: m.linalg.matrix_norm(a, "nuc") + m.linalg.matrix_norm(a, 2)
        + m.linalg.matrix_norm(a, -2), [Arg((2, 3, 4))]),
    _la("linalg_norm_nuc_dims_keepdim", lambda m, a: m.linalg.norm(a, "nuc", dim=(0, 2), keepdim=True),
        [Arg((3, 2, 4))]),
    _la("linalg_norm_spectral_2d", lambda m, a: m.linalg.norm(a, 2), [Arg((4, 3))]),
    # ---------------------------------------------------------------- pinv, lstsq, rank, cond
    _la("linalg_pinv_tall", lambda m, a: L(m, "pinv")(a), [Arg((5, 3))]),
    _la("linalg_pinv_wide_batched", lambda m, a: L(m, "pinv")(a), [Arg((2, 3, 4))]),
    _la("linalg_pinv_hermitian", lambda m, a: L(m, "pinv")(_spd(m, a), hermitian=True), [Arg((3, 3))]),
    _la("pinverse", lambda m, a: m.pinverse(a) + a.pinverse(), [Arg((3, 4))]),
    _la("linalg_lstsq_tall", lambda m, a, b: L(m, "lstsq")(a, b).solution, [Arg((5, 3)), Arg((5, 2))]),
    _la("linalg_lstsq_wide_gelsd", lambda m, a, b: L(m, "lstsq")(a, b, driver="gelsd").solution,
        [Arg((2, 3, 4)), Arg((2, 3, 2))]),
    _la("linalg_lstsq_residuals", lambda m, a, b: L(m, "lstsq")(a, b, driver="gelsd").residuals,
        [Arg((5, 3)), Arg((5, 2))]),
    OpSpec("linalg_lstsq_rank_svals_default_empty", lambda m, a, b: tuple(L(m, "lstsq")(a, b, driver="gelss")[2:])
           + tuple(L(m, "lstsq")(a, b)[1:]) + tuple(L(m, "lstsq")(a, b, driver="gels")[1:3]),
           [Arg((5, 3)), Arg((5, 2))], grad=False, fd=False, dtypes=NO_BF16, notes=NOTE),
    OpSpec("linalg_matrix_rank", lambda m, a, b: L(m, "matrix_rank")(a @ b) + L(m, "matrix_rank")(a @ a.mT, hermitian=True)
           + L(m, "matrix_rank")(a @ b, atol=1e-3, rtol=0.0), [Arg((2, 4, 2)), Arg((2, 2, 5))],
           grad=False, fd=False, dtypes=NO_BF16, notes=NOTE),
    _la("linalg_cond", lambda m, a: L(m, "cond")(a) + L(m, "cond")(a, -2), [Arg((2, 3, 3))]),
    _la("linalg_cond_fro_inf", lambda m, a: L(m, "cond")(a + 3 * m.eye(3), "fro")
        + L(m, "cond")(a + 3 * m.eye(3), float("inf")), [Arg((3, 3), kind="nonzero")], grad=False,
        notes=NOTE + "; torch 2.13's backward of cond(A, 'fro') raises (an in-place write in its "
        "inv_ex): the gradient is checked by finite differences only"),
    # ---------------------------------------------------------------- matrix_exp, cholesky_ex
    _la("linalg_matrix_exp", lambda m, a: m.linalg.matrix_exp(a), [Arg((3, 3))]),
    _la("matrix_exp_batched_large_norm", lambda m, a: m.matrix_exp(3 * a), [Arg((2, 4, 4))]),
    _la("matrix_exp_method", lambda m, a: a.matrix_exp(), [Arg((2, 2))]),
    _la("linalg_cholesky_ex", lambda m, a: L(m, "cholesky_ex")(_spd(m, a))[0], [Arg((2, 3, 3))]),
    OpSpec("linalg_cholesky_ex_info", lambda m, a: L(m, "cholesky_ex")(a - 2 * m.eye(3)).info, [Arg((2, 3, 3))],
           grad=False, fd=False, dtypes=NO_BF16, notes=NOTE),
    _la("triangular_solve_upper", lambda m, a, b: m.triangular_solve(b, a + 3 * m.eye(3)), [Arg((3, 3)), Arg((3, 2))]),
    _la("triangular_solve_lower_transpose_unit_method",
        lambda m, a, b: b.triangular_solve(a, upper=False, transpose=True, unitriangular=True).solution,
        [Arg((2, 3, 3)), Arg((2, 3, 2))]),
    # ---------------------------------------------------------------- tensor-shaped solves, Vandermonde
    _la("linalg_tensorinv", lambda m, a: m.linalg.tensorinv(a + 3 * m.eye(6).reshape(2, 3, 6), ind=2), [Arg((2, 3, 6))]),
    _la("linalg_tensorsolve_dims", lambda m, a, b: m.linalg.tensorsolve(a + 3 * m.eye(6).reshape(6, 2, 3), b, dims=(0,)),
        [Arg((6, 2, 3)), Arg((2, 3))]),
    OpSpec("linalg_vander", lambda m, a: m.linalg.vander(a) + m.linalg.vander(a, N=3).sum(-1, keepdim=True),
           [Arg((2, 4))]),
    # ---------------------------------------------------------------- legacy norm names
    _la("nuclear_norm_legacy", lambda m, a: m.nuclear_norm(a) + m.nuclear_norm(a, True).sum(), [Arg((3, 4))]),
    _la("nuclear_norm_dims", lambda m, a: m.nuclear_norm(a, dim=(0, 2), keepdim=True), [Arg((3, 2, 4))]),
    OpSpec("frobenius_norm_legacy", lambda m, a: m.frobenius_norm(a, (1, 2), True), [Arg((2, 3, 4))]),
]
