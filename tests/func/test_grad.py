"""torch.func.grad / grad_and_value / vjp (shardflow/func/_grad.py) against torch.func."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.func._compare import compare, t

R = np.random.default_rng(1)
X = R.standard_normal(4) + 2.0
Y = R.standard_normal(4) + 2.0


def cubic(x, y):
    return (x * x * y + y / x).sum()


@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1, 0)])
def test_grad_argnums_match_torch(argnums):
    compare(lambda m: m.func.grad(cubic, argnums=argnums)(t(m, X), t(m, Y)))


def test_grad_and_value_with_aux_and_pytree_input_match_torch():
    def f(d, scale):
        loss = (d["w"] * d["w"] * scale + d["b"]).sum()
        return loss, {"twice": loss * 2.0, "w": d["w"]}

    compare(lambda m: m.func.grad_and_value(f, has_aux=True)({"w": t(m, X), "b": t(m, Y)}, 3.0))
    compare(lambda m: m.func.grad(f, has_aux=True)({"w": t(m, X), "b": t(m, Y)}, 3.0))


def test_grad_results_do_not_require_grad_like_torch():
    for m in (sf, torch):
        g, value = m.func.grad_and_value(lambda x: (x * x).sum())(t(m, X))
        assert not g.requires_grad and not value.requires_grad, m.__name__


def test_grad_output_independent_of_input_gives_zeros_like_torch():
    compare(lambda m: m.func.grad(lambda x, y: (y * y).sum(), argnums=(0, 1))(t(m, X), t(m, Y)))


def test_grad_of_grad_matches_torch():
    compare(lambda m: m.func.grad(lambda x: m.func.grad(lambda z: (z * z * z).sum())(x).sum())(t(m, X)))
    # the inner function closes over the outer input: the inner gradient must keep its graph
    compare(lambda m: m.func.grad(lambda y: m.func.grad(cubic)(t(m, X), y).sum())(t(m, Y)))


def test_grad_of_an_input_that_requires_grad_is_differentiable_like_torch():
    def program(m):
        x = t(m, X, requires_grad=True)
        g = m.func.grad(lambda z: (z * z * z).sum())(x)
        assert g.requires_grad
        g.sum().backward()
        return g, x.grad

    compare(program)


def test_grad_same_tensor_in_two_argnums_gets_separate_gradients_like_torch():
    compare(lambda m: m.func.grad(lambda a, b: (a * b * b).sum(), argnums=(0, 1))(*(2 * (t(m, X),))))


GRAD_ERRORS = {
    "non_scalar": (lambda m: m.func.grad(lambda x: x * 2.0)(t(m, X)), "Expected f(*args) to return a scalar Tensor"),
    "non_tensor": (lambda m: m.func.grad(lambda x: 1.0)(t(m, X)), "Expected f(*args) to return a Tensor, got"),
    "aux_not_pair": (lambda m: m.func.grad(lambda x: x.sum(), has_aux=True)(t(m, X)),
                     "output of function f should be a tuple: (output, aux)"),
    "argnum_range": (lambda m: m.func.grad(cubic, argnums=2)(t(m, X), t(m, Y)), "Got argnum=2, but only 2 positional"),
    "argnums_type": (lambda m: m.func.grad(cubic, argnums=[0])(t(m, X), t(m, Y)), "argnums must be int or Tuple"),
    "argnums_repeat": (lambda m: m.func.grad(cubic, argnums=(0, 0))(t(m, X), t(m, Y)), "argnums elements must be unique"),
    "argnums_empty": (lambda m: m.func.grad(cubic, argnums=())(t(m, X), t(m, Y)), "argnums must be non-empty"),
    "non_tensor_arg": (lambda m: m.func.grad(lambda x: x, argnums=0)(2.0), "Thing passed to transform API must be Tensor"),
}


@pytest.mark.parametrize("name", list(GRAD_ERRORS))
def test_grad_errors_like_torch(name):
    program, message = GRAD_ERRORS[name]
    for m in (torch, sf):
        with pytest.raises((RuntimeError, ValueError)) as info:
            program(m)
        assert message in str(info.value), (m.__name__, str(info.value))


def test_vjp_pytree_output_and_aux_match_torch():
    def f(x, y):
        return {"p": x * y, "q": (x * x).sum()}, y * 3.0

    def program(m):
        out, vjp_fn, aux = m.func.vjp(f, t(m, X), t(m, Y), has_aux=True)
        ct = {"p": t(m, Y), "q": t(m, 2.0)}
        first = vjp_fn(ct)
        again = vjp_fn(ct)  # callable more than once
        return out, aux, first, again

    compare(program)


def test_vjp_cotangent_structure_error_like_torch():
    for m in (torch, sf):
        _, vjp_fn = m.func.vjp(lambda x: (x * 2.0, x), t(m, X))
        with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents to be the same"):
            vjp_fn(t(m, X))
