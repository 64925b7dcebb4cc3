"""torch.func.jacrev / jacfwd / hessian / jvp / linearize (shardflow/func/_jacobian.py)
against torch.func: values and the nesting of results for pytrees and argnums tuples."""

import numpy as np
import pytest
import torch

from tests.func._compare import compare, t

R = np.random.default_rng(2)
X = R.standard_normal(3) + 2.0
Y = R.standard_normal((2, 3)) + 2.0


def f(x, y):  # x (3,), y (2, 3) -> (2, 3)
    return x * y * y + y / x


def tree_f(d, y):  # a dict input, a tuple output of two leaves
    return (d["a"] * d["b"] * y).sum(0), (d["a"] * d["a"]).sum()


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
def test_jacobian_argnums_match_torch(jac, argnums):
    compare(lambda m: getattr(m.func, jac)(f, argnums=argnums)(t(m, X), t(m, Y)))


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_pytree_input_and_output_match_torch(jac):
    compare(lambda m: getattr(m.func, jac)(tree_f)({"a": t(m, X), "b": t(m, X[::-1])}, t(m, Y)))
    compare(lambda m: getattr(m.func, jac)(tree_f, argnums=(0, 1))({"a": t(m, X), "b": t(m, X[::-1])}, t(m, Y)))


def test_jacrev_has_aux_matches_torch():
    compare(lambda m: m.func.jacrev(lambda x: (x * x, x.sum()), has_aux=True)(t(m, X)))
    compare(lambda m: m.func.jacfwd(lambda x: (x * x, x.sum()), has_aux=True)(t(m, X)))


def test_hessian_matches_torch():
    compare(lambda m: m.func.hessian(lambda x: (x * x * x).sum() + (x / (x + 1.0)).sum())(t(m, X)))
    compare(lambda m: m.func.hessian(lambda x, y: (x * y * y).sum(), argnums=(0, 1))(t(m, X), t(m, Y)))
    compare(lambda m: m.func.hessian(lambda d: (d["u"] * d["u"] * d["v"]).sum())({"u": t(m, X), "v": t(m, X[::-1])}))


def test_jvp_matches_torch():
    tangent = np.random.default_rng(5).standard_normal(3)
    compare(lambda m: m.func.jvp(f, (t(m, X), t(m, Y)), (t(m, np.ones(3)), t(m, np.arange(6.0).reshape(2, 3)))))
    compare(lambda m: m.func.jvp(lambda x: ((x * x).sum(), x * 3.0), (t(m, X),), (t(m, tangent),)))
    compare(lambda m: m.func.jvp(lambda x: (x * x, x.sum()), (t(m, X),), (t(m, np.ones(3)),), has_aux=True))


def test_jvp_errors_like_torch():
    for m in (torch, __import__("shardflow")):
        with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
            m.func.jvp(lambda x: x, t(m, X), (t(m, X),))
        with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same python structure"):
            m.func.jvp(lambda x: x, (t(m, X),), (t(m, X), t(m, X)))
        with pytest.raises(RuntimeError, match="is independent of the inputs"):
            m.func.jvp(lambda x: m.ones(3, dtype=m.float64), (t(m, X),), (t(m, X),), strict=True)


def test_linearize_matches_torch_for_several_tangents():
    def program(m):
        out, jvp_fn = m.func.linearize(lambda x, y: (x * y).sum(0) * x, t(m, X), t(m, Y))
        return out, jvp_fn(t(m, np.ones(3)), t(m, np.ones((2, 3)))), jvp_fn(t(m, X), t(m, Y))

    compare(program)


def test_hessian_through_matmul_and_slicing_matches_torch():
    A = np.random.default_rng(7).standard_normal((3, 3))
    compare(lambda m: m.func.hessian(lambda x, a: (x @ a @ x) * (x * x).sum(), argnums=(0, 1))(t(m, X), t(m, A)))
    compare(lambda m: m.func.vmap(m.func.hessian(lambda x: (x[:2] * x[1:]).sum() ** 2))(t(m, A)))
