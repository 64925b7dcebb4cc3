"""The LU / eig / Householder / LDL / low-rank family (shardflow/ops/linalg_lu.py, linalg_eig.py,
linalg_householder.py, linalg_ldl.py, linalg_lowrank.py) beyond the op spec table
(tests/ops/specs/linalg_lu.py: values and gradients against torch, float64 finite differences):
the ``torch.linalg`` names, torch's errors for singular / non-square / mistyped input, second
derivatives, and the gradients that depend on a random draw."""

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.autograd.higher_order import DoubleBackwardNotImplemented
from shardflow.testing.gradcheck import gradcheck


def _pair(a, requires_grad=False):
    return (torch.tensor(a, requires_grad=requires_grad), sf.tensor(a, requires_grad=requires_grad))


def test_linalg_names_are_the_ops():
    for name in ("lu_factor", "lu_factor_ex", "lu", "lu_solve", "eig", "eigvals", "householder_product",
                 "ldl_factor", "ldl_factor_ex", "ldl_solve"):
        assert getattr(sf.linalg, name) is getattr(sf, "linalg_" + name), name
    assert sf.orgqr(sf.eye(3), sf.zeros(2)).shape == (3, 3)
    for call, fields in [(lambda m: m.linalg.lu_factor_ex(m.eye(2)), ("LU", "pivots", "info")),
                         (lambda m: m.linalg.lu(m.eye(2)), ("P", "L", "U")),
                         (lambda m: m.lu_unpack(*m.linalg.lu_factor(m.eye(2))), ("P", "L", "U")),
                         (lambda m: m.linalg.eig(m.eye(2)), ("eigenvalues", "eigenvectors")),
                         (lambda m: m.geqrf(m.eye(2)), ("a", "tau")),
                         (lambda m: m.linalg.ldl_factor_ex(m.eye(2)), ("LD", "pivots", "info"))]:
        t_out, s_out = call(torch), call(sf)
        assert type(s_out).__name__ == type(t_out).__name__
        for f in fields:
            assert tuple(getattr(s_out, f).shape) == tuple(getattr(t_out, f).shape), (type(t_out).__name__, f)


def test_singular_lu_as_torch():
    """lu_factor raises (naming the zero pivot, as torch); lu_factor_ex returns info; linalg.lu
    and torch.lu(get_infos=True) factor without complaint."""
    a = np.array([[[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]]])
    ta, sa = _pair(a)
    with pytest.raises(sf.linalg.LinAlgError, match=r"\(Batch element 1\): U\[2,2\] is zero"):
        sf.linalg.lu_factor(sa)
    with pytest.raises(RuntimeError, match=r"torch.linalg.lu_factor: \(Batch element 1\): U\[2,2\] is zero"):
        torch.linalg.lu_factor(ta)  # the same words (shardflow's LinAlgError is a RuntimeError)
    with pytest.raises(RuntimeError, match=r"lu_factor_ex: \(Batch element 1\): U\[2,2\]"):
        sf.linalg.lu_factor_ex(sa, check_errors=True)
    with pytest.raises(RuntimeError, match="is zero"):
        sf.lu(sa)
    for t_out, s_out in [(torch.linalg.lu_factor_ex(ta), sf.linalg.lu_factor_ex(sa)),
                         (torch.linalg.lu(ta), sf.linalg.lu(sa)), (torch.lu(ta, get_infos=True), sf.lu(sa, get_infos=True))]:
        for t, s in zip(t_out, s_out):
            assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            np.testing.assert_allclose(s.numpy(), t.numpy(), atol=1e-12)


@pytest.mark.parametrize("call,match", [
    (lambda m: m.linalg.lu_factor(m.ones(3)), "(at least 2|2 or more) dimensions"),
    (lambda m: m.linalg.lu_factor(m.ones(3, 3), pivot=False), "without pivoting is not implemented on the CPU"),
    (lambda m: m.linalg.lu(m.ones(2, 2), pivot=False), "without pivoting is not implemented on the CPU"),
    (lambda m: m.linalg.lu_factor(m.ones(3, 3, dtype=m.int32)), "Int|int32"),
    (lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.randn(3, 2)), m.ones(3, 1)),
     "must be batches of square matrices, but they are 3 by 2"),
    (lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.eye(3)), m.ones(3)), "B must have at least 2 dimensions"),
    (lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.eye(3)), m.ones(2, 2)),
     r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 2x2\)"),
    (lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(m.eye(3)), m.ones(2, 2), left=False),
     r"equation XA = B \(3x3 and 2x2\)"),
    (lambda m: m.linalg.eig(m.ones(2, 3)), "must be batches of square matrices, but they are 2 by 3"),
    (lambda m: m.linalg.eigvals(m.ones(2, 3)), "must be batches of square matrices"),
    (lambda m: m.linalg.householder_product(m.ones(2, 3), m.ones(2)),
     r"input.shape\[-2\] must be greater than or equal to input.shape\[-1\]"),
    (lambda m: m.linalg.householder_product(m.ones(3, 2), m.ones(3)),
     r"input.shape\[-1\] must be greater than or equal to tau.shape\[-1\]"),
    (lambda m: m.ormqr(m.ones(5, 3), m.ones(2), m.ones(5, 2)),
     r"tau.shape\[-1\] must be equal to min\(other.shape\[-2\], input.shape\[-1\]\)"),
    (lambda m: m.ormqr(m.ones(5, 3), m.ones(2), m.ones(2, 3)), r"other.shape\[-2\] must be equal to input.shape\[-2\]"),
    (lambda m: m.linalg.ldl_factor(m.ones(2, 3)), "must be batches of square matrices, but they are 2 by 3"),
    (lambda m: m.linalg.ldl_solve(*m.linalg.ldl_factor(m.eye(4, dtype=m.float64)), m.ones(3, 2, dtype=m.float64)),
     "Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 4 by 4 but each b matrix is 3 by 2"),
])
def test_errors_name_what_torch_names(call, match):
    for m in (torch, sf):
        with pytest.raises((RuntimeError, NotImplementedError), match=match):
            call(m)


def test_deprecated_lu_and_lu_solve_warn_as_torch():
    """torch's words (torch warns once per process, so only shardflow is checked here, under
    ``set_warn_always(True)``)."""
    lu, piv = sf.linalg.lu_factor(sf.eye(2))
    sf.set_warn_always(True)
    try:
        with pytest.warns(UserWarning, match=r"torch.lu is deprecated in favor of torch.linalg.lu_factor"):
            sf.lu(sf.eye(2))
        with pytest.warns(UserWarning, match=r"torch.linalg.lu_solve has its arguments reversed"):
            sf.lu_solve(sf.ones(2, 1), lu, piv)
    finally:
        sf.set_warn_always(False)


def test_deprecated_lu_and_lu_solve_warn_once_per_process():
    """torch's ``TORCH_WARN_ONCE``: a second call in the process does not warn again (the
    normalizing-flows program's three ``Invertible1x1Conv`` layers gave three warnings)."""
    import warnings

    lu, piv = sf.linalg.lu_factor(sf.eye(2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            sf.eye(2).lu()
            sf.lu_solve(sf.ones(2, 1), lu, piv)
    assert sum("torch.lu is deprecated" in str(w.message) for w in caught) <= 1
    assert sum("torch.lu_solve is deprecated" in str(w.message) for w in caught) <= 1


def test_lu_unpack_refuses_pivots_not_from_lu_factor():
    lu, piv = sf.linalg.lu_factor(sf.eye(3))
    with pytest.raises(RuntimeError, match="torch.int32 dtype.*convert with .int"):
        sf.lu_unpack(lu, piv.long())


def test_lu_double_backward_matches_torch():
    """LU's backward is written with differentiable ops: the gradient of a gradient (square,
    wide, tall; through lu_factor, lu and lu_solve) matches torch's."""
    rng = np.random.default_rng(0)
    for shape in [(3, 3), (2, 4), (4, 2)]:
        a = rng.standard_normal(shape)
        w = rng.standard_normal(shape)
        grads = []
        for m in (torch, sf):
            A = m.tensor(a, requires_grad=True)
            p, low, up = m.linalg.lu(A)
            loss = (low.sin().sum() + (up * up).sum()) if shape[0] != shape[1] else \
                m.linalg.lu_solve(*m.linalg.lu_factor(A), m.tensor(w)).sum() + (up ** 3).sum()
            (g,) = m.autograd.grad(loss, A, create_graph=True)
            (g * m.tensor(w)).sum().backward()
            grads.append(A.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-9, atol=1e-9, err_msg=str(shape))


def test_eig_gradient_is_first_order_and_checks_the_phase():
    a = np.random.default_rng(1).standard_normal((3, 3))
    A = sf.tensor(a, requires_grad=True)
    w, v = sf.linalg.eig(A)
    (g,) = sf.autograd.grad((v.abs() * w.real.unsqueeze(-2)).sum(), A, create_graph=True)
    with pytest.raises(DoubleBackwardNotImplemented, match="LinalgEig"):
        g.sum().backward()
    _, v = sf.linalg.eig(A)
    with pytest.raises(RuntimeError, match="specified up to multiplication by e\\^\\{i phi\\}"):
        v.imag.sum().backward()  # depends on LAPACK's choice of phase: ill-defined, as in torch


def test_eig_values_and_vectors_agree_with_torch_up_to_order_and_phase():
    a = np.random.default_rng(2).standard_normal((2, 4, 4)).astype(np.float32)
    ta, sa = _pair(a)
    tw, tv = torch.linalg.eig(ta)
    sw, sv = sf.linalg.eig(sa)
    assert sw.dtype == sf.complex64 and sv.dtype == sf.complex64
    np.testing.assert_allclose(sf.linalg.eigvals(sa.double()).numpy(), torch.linalg.eigvals(ta.double()).numpy(),
                               rtol=1e-10)
    for b in range(2):
        order_t, order_s = np.argsort(tw[b].numpy(), kind="stable"), np.argsort(sw[b].numpy(), kind="stable")
        np.testing.assert_allclose(sw[b].numpy()[order_s], tw[b].numpy()[order_t], rtol=1e-4, atol=1e-5)
        vt, vs = tv[b].numpy()[:, order_t], sv[b].numpy()[:, order_s]
        phase = (vt.conj() * vs).sum(0)  # |<vt, vs>| = 1: the same unit vector up to a phase
        np.testing.assert_allclose(np.abs(phase), 1, rtol=1e-4)
        np.testing.assert_allclose(a[b] @ vs, vs * sw[b].numpy()[order_s], atol=1e-4)


def test_geqrf_and_ldl_have_no_derivative_as_torch():
    a = np.random.default_rng(3).standard_normal((3, 3))
    A = sf.tensor(a, requires_grad=True)
    # torch: geqrf has its own node, NotImplementedError; ldl_factor the generic node, RuntimeError
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        sf.geqrf(A).a.sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
        sf.linalg.ldl_factor(A + A.mT)[0].sum().backward()
    # (torch 2.13 answers check_errors=True here with an internal assert, "Unknown error code: 1")
    with pytest.raises(sf.linalg.LinAlgError, match=r"D\[1,1\] is exactly zero"):
        sf.linalg.ldl_factor_ex(sf.zeros(2, 2), check_errors=True)
    info = sf.linalg.ldl_factor_ex(sf.zeros(2, 2)).info
    assert info.item() == torch.linalg.ldl_factor_ex(torch.zeros(2, 2)).info.item() == 1


def test_geqrf_reflectors_rebuild_q_and_r():
    """orgqr(geqrf(A)) is linalg.qr's Q (same LAPACK Householder signs); ormqr applies it."""
    a = sf.tensor(np.random.default_rng(4).standard_normal((2, 5, 3)))
    qr, tau = sf.geqrf(a)
    q = sf.orgqr(qr, tau)
    np.testing.assert_allclose((q @ qr.triu()[..., :3, :]).numpy(), a.numpy(), atol=1e-12)
    np.testing.assert_allclose(q.numpy(), sf.linalg.qr(a).Q.numpy(), atol=1e-12)
    c = sf.tensor(np.random.default_rng(5).standard_normal((2, 5, 2)))
    full_q = sf.ormqr(qr, tau, sf.eye(5, dtype=sf.float64).expand(2, 5, 5))
    np.testing.assert_allclose(sf.ormqr(qr, tau, c, transpose=True).numpy(), (full_q.mT @ c).numpy(), atol=1e-12)


def test_lowrank_gradients_at_a_fixed_draw():
    """svd_lowrank / pca_lowrank are differentiable compositions: their gradient at a fixed
    seed (the same random basis every call) matches float64 finite differences."""
    a = np.random.default_rng(6).standard_normal((5, 4))

    def svd_part(x):
        sf.manual_seed(0)
        u, s, v = sf.svd_lowrank(x, q=3, niter=1)
        return s, (u * s.unsqueeze(-2)) @ v.mT

    def pca_part(x):
        sf.manual_seed(0)
        return sf.pca_lowrank(x, q=2)[1]

    for fn in (svd_part, pca_part):
        gradcheck(fn, [sf.tensor(a, requires_grad=True)], atol=1e-5, rtol=1e-3)
    with pytest.raises(ValueError, match=r"q\(=5\) must be non-negative integer and not greater than min\(m, n\)=4"):
        sf.pca_lowrank(sf.tensor(a), q=5)


def test_cuda_path_on_the_host_stand_in():
    """device='cuda' (CuPy's stand-in, tests/doubles/host_cupy.py): LAPACK runs on the host and
    the results come back as device arrays; pivot=False is the unpivoted elimination there."""
    from tests.doubles import host_cuda

    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))
    with host_cuda.installed():
        A = sf.tensor(a, device="cuda", requires_grad=True)
        lu, piv = sf.linalg.lu_factor(A)
        x = sf.linalg.lu_solve(lu, piv, sf.tensor(b, device="cuda"))
        x.sum().backward()
        assert x.device.type == "cuda" and piv.device.type == "cuda" and A.grad.device.type == "cuda"
        p, low, up = sf.linalg.lu(A, pivot=False)
        assert p.numel() == 0
        np.testing.assert_allclose((low @ up).cpu().numpy(), a, atol=1e-12)
        w = sf.linalg.eigvals(A)
        qr, tau = sf.geqrf(A)
        ld, lpiv = sf.linalg.ldl_factor(A + A.mT)
        y = sf.linalg.ldl_solve(ld, lpiv, sf.tensor(b, device="cuda"))
        outs = [x.cpu().numpy(), A.grad.cpu().numpy(), w.cpu().numpy(), qr.cpu().numpy(), y.cpu().numpy()]
    ta = torch.tensor(a, requires_grad=True)
    tx = torch.linalg.lu_solve(*torch.linalg.lu_factor(ta), torch.tensor(b))
    tx.sum().backward()
    np.testing.assert_allclose(outs[0], tx.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(outs[1], ta.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(outs[2].ravel()), np.sort_complex(np.linalg.eigvals(a).ravel()), atol=1e-12)
    np.testing.assert_allclose(outs[3], torch.geqrf(torch.tensor(a)).a.numpy(), atol=1e-12)
    np.testing.assert_allclose(outs[4], torch.linalg.solve(torch.tensor(a + np.swapaxes(a, -1, -2)), torch.tensor(b)).numpy(),
                               atol=1e-10)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 3), (3, 0), (0, 3, 3)])
def test_empty_matrices_and_batches_have_torch_shapes(shape):
    """A batch or matrix of size 0 once failed the host batching (reshape(-1, ...) of nothing)."""
    for call in (lambda m: m.linalg.lu_factor_ex(m.zeros(*shape)), lambda m: m.linalg.lu(m.zeros(*shape)),
                 lambda m: m.geqrf(m.zeros(*shape))):
        t_out, s_out = call(torch), call(sf)
        assert [tuple(s.shape) for s in s_out] == [tuple(t.shape) for t in t_out]
