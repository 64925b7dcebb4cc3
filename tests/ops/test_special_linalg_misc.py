"""What the spec table cannot show for ``ops/special_functions.py``, ``ops/cholesky.py`` and
``ops/gamma_sampling.py``: edge values against torch (poles, +-0, domain ends), PyTorch's
errors, the ``torch.linalg`` / ``torch.special`` namespaces, and the implicit-gradient
kernels against torch's on a wide grid."""

import numpy as np
import pytest
import torch

import shardflow


def test_edge_values_match_torch():
    x = np.array([0.0, -0.0, -1.0, -2.0, 1.0, 2.0, 0.5, -0.5, 1e-8, 1e6, np.inf, -np.inf, np.nan])
    for name in ("lgamma", "digamma"):
        got = getattr(shardflow, name)(shardflow.tensor(x)).numpy()
        want = getattr(torch, name)(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True, err_msg=name)
    y = np.array([-1.0, 1.0, 0.0, 1.5, -1.5, 0.999999, -0.3])
    np.testing.assert_allclose(shardflow.erfinv(shardflow.tensor(y)).numpy(),
                               torch.erfinv(torch.tensor(y)).numpy(), rtol=1e-10, equal_nan=True)
    for n in (1, 2, 3):
        z = np.array([0.01, 0.5, 3.0, 40.0, -1.5])
        np.testing.assert_allclose(shardflow.polygamma(n, shardflow.tensor(z)).numpy(),
                                   torch.polygamma(n, torch.tensor(z)).numpy(), rtol=1e-8)
    a, b = np.array([0.0, 0.0, 1.0, 2.0]), np.array([0.0, np.nan, 0.0, 3.0])
    np.testing.assert_allclose(shardflow.xlogy(shardflow.tensor(a), shardflow.tensor(b)).numpy(),
                               torch.xlogy(torch.tensor(a), torch.tensor(b)).numpy(), equal_nan=True)


def test_integer_inputs_give_the_default_float():
    for name in ("lgamma", "digamma", "erfinv"):
        t = getattr(shardflow, name)(shardflow.tensor([1, 2]))
        assert str(t.dtype) == "shardflow.float32"
    assert str(shardflow.xlogy(shardflow.tensor([1, 2]), shardflow.tensor([3, 4])).dtype) == "shardflow.float32"


def test_errors():
    with pytest.raises(RuntimeError, match="non-negative Python int"):
        shardflow.polygamma(-1, shardflow.ones(2))
    with pytest.raises(RuntimeError, match="greater than"):
        shardflow.mvlgamma(shardflow.tensor([0.5, 2.0]), 3)
    with pytest.raises(shardflow.linalg.LinAlgError, match="leading minor of order 2 is not positive-definite"):
        shardflow.linalg.cholesky(shardflow.tensor([[1.0, 2.0], [2.0, 1.0]]))
    assert issubclass(shardflow.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="bfloat16"):
        shardflow.linalg.cholesky(shardflow.eye(2).bfloat16())
    with pytest.raises(RuntimeError, match="square"):
        shardflow.linalg.cholesky(shardflow.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        shardflow.linalg.solve_triangular(shardflow.eye(2), shardflow.ones(2), upper=False)
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        shardflow.linalg.solve_triangular(shardflow.eye(2), shardflow.ones(3, 1), upper=False)


def test_namespaces_reach_the_ops():
    import shardflow as t

    assert t.linalg.cholesky is t.linalg_cholesky
    assert t.linalg.solve_triangular is t.linalg_solve_triangular
    # torch.special's aliases are the ops with out= (special_common.with_out)
    assert t.special.gammaln.__wrapped__ is t.lgamma and t.special.psi.__wrapped__ is t.digamma
    assert t.special.xlogy.__wrapped__ is t.xlogy and t.special.erfinv.__wrapped__ is t.erfinv
    assert t.distributions.Normal.__module__ == "shardflow.distributions.normal"
    x = t.tensor([0.5, 2.0])
    assert np.allclose(x.lgamma().numpy(), torch.tensor([0.5, 2.0]).lgamma().numpy())
    assert np.allclose(x.polygamma(1).numpy(), torch.tensor([0.5, 2.0]).polygamma(1).numpy())


def test_implicit_gradient_kernels_match_torch_on_a_grid():
    from shardflow.ops.gamma_sampling import dirichlet_grad_array, standard_gamma_grad_array

    rng = np.random.default_rng(0)
    alpha = np.concatenate([rng.uniform(0.02, 1, 500), rng.uniform(1, 30, 1500)])
    x = rng.standard_gamma(alpha)
    np.testing.assert_allclose(standard_gamma_grad_array(alpha, x),
                               torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy(),
                               rtol=1e-9)
    a = rng.uniform(0.05, 20, 3000)
    b = rng.uniform(0.05, 20, 3000)
    xb = np.clip(rng.beta(a, b), 1e-12, 1 - 1e-12)
    np.testing.assert_allclose(dirichlet_grad_array(xb, a, a + b),
                               torch._dirichlet_grad(torch.tensor(xb), torch.tensor(a), torch.tensor(a + b)).numpy(),
                               rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda L: L.inverse(L.zeros(2, 2)),
    lambda L: L.linalg.inv(L.tensor([[1.0, 2.0], [2.0, 4.0]])),
    lambda L: L.linalg.solve(L.zeros(3, 3), L.ones(3)),
], ids=["inverse", "linalg.inv", "linalg.solve"])
def test_a_singular_matrix_raises_torchs_linalg_error(call):
    # torch.inverse raised NumPy's LinAlgError (a ValueError), which `except RuntimeError` missed
    for lib in (torch, shardflow):
        with pytest.raises(lib.linalg.LinAlgError, match="singular"):
            call(lib)
