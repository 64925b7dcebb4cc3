"""The decompositions beyond the op spec table (tests/ops/specs/decompositions.py): named
results, the non-differentiable cases torch refuses, rank-deficient inputs, errors, and the
gauge — gradients of gauge-invariant functions of the vectors agree with torch even where the
vectors' signs may not."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(shape, seed=0, sym=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    if sym:
        a = a + np.swapaxes(a, -1, -2)
    return sf.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def test_named_results_match_torch_fields():
    a = sf.randn(4, 3)
    assert sf.linalg.qr(a)._fields == ("Q", "R")
    assert torch.linalg.qr(torch.randn(4, 3)).Q.shape == sf.linalg.qr(a).Q.shape
    assert sf.linalg.svd(a)._fields == ("U", "S", "Vh")
    assert sf.svd(a)._fields == ("U", "S", "V")
    assert sf.linalg.eigh(a @ a.mT)._fields == ("eigenvalues", "eigenvectors")
    assert sf.linalg.lstsq(a, sf.randn(4, 2))._fields == ("solution", "residuals", "rank", "singular_values")
    assert sf.linalg.cholesky_ex(sf.eye(3))._fields == ("L", "info")


def test_factors_reconstruct_and_are_orthonormal():
    a = sf.tensor(np.random.default_rng(1).standard_normal((2, 5, 3)))
    q, r = sf.linalg.qr(a)
    np.testing.assert_allclose((q @ r).numpy(), a.numpy(), atol=1e-12)
    np.testing.assert_allclose((q.mT @ q).numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-12)
    assert np.allclose(np.tril(r.numpy(), -1), 0)
    u, s, v = sf.svd(a)  # torch.svd: V, not Vh
    np.testing.assert_allclose((u * s.unsqueeze(-2) @ v.mT).numpy(), a.numpy(), atol=1e-12)
    w, vec = sf.linalg.eigh(a.mT @ a)
    np.testing.assert_allclose((vec * w.unsqueeze(-2) @ vec.mT).numpy(), (a.mT @ a).numpy(), atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_svd_gauge_invariant_gradient_matches_torch(shape):
    """``U U^T`` and ``V V^T`` do not see the singular vectors' signs: their gradients (through
    every term of the SVD backward) must equal torch's."""
    s_a, t_a = _pair(shape, seed=3)
    w = np.random.default_rng(4).standard_normal((shape[0], shape[0]))
    for lib, a in ((sf, s_a), (torch, t_a)):
        u, s, vh = lib.linalg.svd(a, full_matrices=False)
        loss = ((u @ u.mT * s.sum()) * lib.tensor(w)).sum() + (vh.mT @ vh).pow(2).sum() * 0.1 + (u[:, 0] ** 4).sum()
        loss.backward()
    np.testing.assert_allclose(s_a.grad.numpy(), t_a.grad.numpy(), atol=1e-9)


def test_eigh_gauge_invariant_gradient_matches_torch():
    s_a, t_a = _pair((2, 4, 4), seed=5, sym=True)
    for lib, a in ((sf, s_a), (torch, t_a)):
        w, v = lib.linalg.eigh(a)
        ((v[..., :2] @ v[..., :2].mT) ** 2).sum().add((w ** 3).sum()).backward()
    np.testing.assert_allclose(s_a.grad.numpy(), t_a.grad.numpy(), atol=1e-9)
    np.testing.assert_allclose(s_a.grad.numpy(), s_a.grad.numpy().swapaxes(-1, -2), atol=1e-12)


def test_qr_undifferentiable_modes_raise_as_torch():
    a = sf.randn(5, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="mode='r'"):
        sf.linalg.qr(a, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="mode='complete' and nrows > ncols"):
        sf.linalg.qr(a, mode="complete").Q.sum().backward()
    assert sf.linalg.qr(a, mode="r").Q.shape == (0,)
    with pytest.raises(RuntimeError, match="unrecognized mode 'full'"):
        sf.linalg.qr(a, mode="full")


def test_refusals_name_the_fix():
    with pytest.raises(RuntimeError, match=r"\.float\(\) or \.double\(\)"):
        sf.linalg.svd(sf.randn(3, 3).to(sf.bfloat16))
    with pytest.raises(RuntimeError, match="square"):
        sf.linalg.eigh(sf.randn(3, 4))
    with pytest.raises(RuntimeError, match="UPLO"):
        sf.linalg.eigvalsh(sf.eye(3), UPLO="X")
    with pytest.raises(RuntimeError, match="unsqueeze"):
        sf.linalg.lstsq(sf.randn(4, 3), sf.randn(4))
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        sf.linalg.matrix_norm(sf.randn(3, 3), 3)


def test_rank_deficient_pinv_rank_lstsq_match_torch():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 5, 2)) @ rng.standard_normal((2, 2, 4))  # rank 2
    b = rng.standard_normal((2, 5, 3))
    sa, ta = sf.tensor(a), torch.tensor(a)
    np.testing.assert_allclose(sf.linalg.pinv(sa).numpy(), torch.linalg.pinv(ta).numpy(), atol=1e-10)
    assert sf.linalg.matrix_rank(sa).tolist() == torch.linalg.matrix_rank(ta).tolist() == [2, 2]
    assert sf.linalg.matrix_rank(sa, hermitian=False, atol=1e9).tolist() == [0, 0]
    got = sf.linalg.lstsq(sa, sf.tensor(b), driver="gelsd")
    want = torch.linalg.lstsq(ta, torch.tensor(b), driver="gelsd")
    np.testing.assert_allclose(got.solution.numpy(), want.solution.numpy(), atol=1e-10)
    assert got.rank.tolist() == want.rank.tolist()
    assert got.residuals.shape == want.residuals.shape == (0,)  # not full rank: torch leaves it empty


def test_cholesky_ex_reports_info_without_raising():
    good = np.eye(3) * 2
    bad = np.diag([1.0, -1.0, 1.0])
    a = np.stack([good, bad])
    got = sf.linalg.cholesky_ex(sf.tensor(a))
    want = torch.linalg.cholesky_ex(torch.tensor(a))
    assert got.info.tolist() == want.info.tolist() == [0, 2]
    assert got.info.dtype == sf.int32
    np.testing.assert_allclose(got.L.numpy()[0], want.L.numpy()[0])
    with pytest.raises(sf.linalg.LinAlgError):
        sf.linalg.cholesky_ex(sf.tensor(a), check_errors=True)


def test_matrix_exp_of_known_matrices():
    """exp of a rotation generator is the rotation; of a nilpotent matrix, the finite series;
    a large norm exercises the squaring."""
    t = 7.5
    rot = sf.linalg.matrix_exp(sf.tensor([[0.0, -t], [t, 0.0]], dtype=sf.float64)).numpy()
    np.testing.assert_allclose(rot, [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]], atol=1e-12)
    nil = sf.matrix_exp(sf.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=sf.float64)).numpy()
    np.testing.assert_allclose(nil, [[1, 1, 2 + 1.5], [0, 1, 3], [0, 0, 1]], atol=1e-14)
    a = np.random.default_rng(8).standard_normal((3, 3)) * 4
    np.testing.assert_allclose(sf.tensor(a).matrix_exp().numpy(), torch.linalg.matrix_exp(torch.tensor(a)).numpy(),
                               rtol=1e-10)


def test_torch_svd_compute_uv_false_gives_zero_factors():
    u, s, v = sf.svd(sf.randn(2, 4, 3), compute_uv=False)
    assert u.shape == (2, 4, 4) and v.shape == (2, 3, 3) and s.shape == (2, 3)
    assert not u.numpy().any() and not v.numpy().any()


def test_orthogonal_init_still_orthogonal():
    w = sf.nn.init.orthogonal_(sf.empty(4, 6))
    np.testing.assert_allclose((w @ w.mT).numpy(), np.eye(4), atol=1e-5)


def test_linalg_namespace_reexports_the_ops():
    for name in ("qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "matrix_rank", "cond",
                 "cholesky_ex", "matrix_exp"):
        assert getattr(sf.linalg, name) is getattr(sf, "linalg_" + name), name
        assert hasattr(torch.linalg, name)


def test_vander_gradient_is_finite_at_zero_like_torch():
    x = np.array([0.0, 1.5, -2.0])
    s_x, t_x = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    sf.linalg.vander(s_x, N=4).sum().backward()
    torch.linalg.vander(t_x, N=4).sum().backward()
    assert np.isfinite(s_x.grad.numpy()).all()
    np.testing.assert_allclose(s_x.grad.numpy(), t_x.grad.numpy())


def test_tensor_shaped_refusals():
    with pytest.raises(RuntimeError, match="prod"):
        sf.linalg.tensorinv(sf.randn(2, 3, 4), ind=2)
    with pytest.raises(RuntimeError, match="prod"):
        sf.linalg.tensorsolve(sf.randn(2, 3, 4), sf.randn(2, 3))


def test_matrix_exp_of_non_finite_input_is_non_finite_not_an_error():
    out = sf.linalg.matrix_exp(sf.tensor([[float("inf"), 0.0], [0.0, 1.0]]))
    assert not np.isfinite(out.numpy()).all()


def test_complex_input_is_refused_by_name():
    with pytest.raises(RuntimeError, match="complex matrices"):
        sf.linalg.svd(sf.randn(2, 2).to(sf.complex64))
