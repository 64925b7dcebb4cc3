"""backward_graph of the elementwise ops (ops/elementwise.py): the gradient of the gradient
against torch 2.13 and finite differences (float64), through create_graph=True."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

R = np.random.default_rng(2)
POS = R.random((2, 3)) + 0.5        # in (0.5, 1.5): log, sqrt, pow
UNIT = R.random((2, 3)) * 1.4 - 0.7  # in (-0.7, 0.7): asin, acos
MIX = R.standard_normal((2, 3)) * 2  # both signs, away from kinks in practice
MIX[np.abs(MIX) < 0.1] += 0.3
OTHER = R.standard_normal((2, 3))
OTHER[np.abs(OTHER - MIX) < 0.1] += 0.5
ROW = R.random(3) + 0.5


def _m(m, name):
    """``m.name`` or ``m.nn.functional.name``."""
    return getattr(m, name) if hasattr(m, name) else getattr(m.nn.functional, name)


UNARY = {  # name: input
    "exp": MIX, "exp2": MIX, "expm1": MIX, "sqrt": POS, "rsqrt": POS, "tanh": MIX,
    "tan": UNIT, "sigmoid": MIX, "log": POS, "log2": POS, "log10": POS, "log1p": POS,
    "sin": MIX, "cos": MIX, "sinh": MIX, "cosh": MIX, "asin": UNIT, "acos": UNIT,
    "atan": MIX, "erf": MIX, "erfc": MIX, "square": MIX, "abs": MIX, "relu": MIX,
    "silu": MIX, "mish": MIX, "logsigmoid": MIX, "hardsigmoid": MIX, "hardswish": MIX,
    "selu": MIX, "celu": MIX, "relu6": MIX * 4,
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_double_backward(name):
    # f(x) = sum(op(x) * x): second derivative couples op'' and op' (a linear op alone
    # would make the Hessian trivially 0)
    # torch 2.13 has no double backward for hardsigmoid: finite differences only
    check_double_backward(lambda m, x: (_m(m, name)(x) * x).sum(), [UNARY[name]],
                          torch_ref=name != "hardsigmoid")


PARAM = {
    "gelu": lambda m, x: m.nn.functional.gelu(x),
    "gelu_tanh": lambda m, x: m.nn.functional.gelu(x, approximate="tanh"),
    "softplus": lambda m, x: m.nn.functional.softplus(x, beta=2.0, threshold=3.0),
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.2),
    "elu": lambda m, x: m.nn.functional.elu(x, alpha=0.7),
    "hardtanh": lambda m, x: m.nn.functional.hardtanh(x, -1.5, 1.5),
    "pow_scalar": lambda m, x: x.abs() ** 2.5 + x ** 2 + x ** 3,
    "pow_neg": lambda m, x: (x.abs() + 1) ** -1.5,
    "scalar_pow": lambda m, x: 1.7 ** x,
    "clamp": lambda m, x: m.clamp(x, -1.0, 1.0) * x,
    "clamp_min": lambda m, x: m.clamp(x, min=-0.5) * x,
}


@pytest.mark.parametrize("name", list(PARAM))
def test_parametrized_double_backward(name):
    check_double_backward(lambda m, x: (PARAM[name](m, x) * x).sum(), [MIX])


BINARY = {
    "pow_tensor": (lambda m, a, b: (a ** b).sum(), POS, OTHER),
    "pow_tensor_bcast": (lambda m, a, b: (a ** b).sum(), POS, ROW),
    "maximum": (lambda m, a, b: (m.maximum(a, b) * a * b).sum(), MIX, OTHER),
    "minimum": (lambda m, a, b: (m.minimum(a, b) * a * b).sum(), MIX, OTHER),
    "fmax": (lambda m, a, b: (m.fmax(a, b) * a).sum(), MIX, OTHER),
    "where": (lambda m, a, b: (m.where(a > 0, a * b, b * b) * a).sum(), MIX, OTHER),
    "lerp_tensor": (lambda m, a, b: (m.lerp(a, b, a.sigmoid()) * b).sum(), MIX, OTHER),
    "lerp_scalar": (lambda m, a, b: (m.lerp(a, b, 0.3) * a * b).sum(), MIX, OTHER),
    "addcmul": (lambda m, a, b: (m.addcmul(a, a, b, value=0.5) * b).sum(), MIX, OTHER),
    "addcdiv": (lambda m, a, b: (m.addcdiv(b, b, a + 3.0, value=2.0) * a).sum(), POS, OTHER),
    "clamp_tensor": (lambda m, a, b: (m.clamp(a, min=b) * a * b).sum(), MIX, OTHER),
    "clamp_tensor_both": (lambda m, a, b: (m.clamp(a, b - 1.0, b + 0.5) * a * b).sum(), MIX, OTHER),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_double_backward(name):
    f, a, b = BINARY[name]
    check_double_backward(f, [a, b])


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "sin", "log"])
def test_third_order_matches_torch(name):
    x0 = POS if name == "log" else MIX
    res = []
    for m in (sf, torch):
        x = m.tensor(x0, requires_grad=True)
        g, = m.autograd.grad(getattr(m, name)(x).sum(), x, create_graph=True)
        h, = m.autograd.grad(g.sum(), x, create_graph=True)
        t, = m.autograd.grad(h.sum(), x)
        res.append(t.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10, atol=1e-12)


def test_float32_double_backward_keeps_dtype():
    x = sf.tensor(MIX.astype(np.float32), requires_grad=True)
    g, = sf.autograd.grad((x.tanh() * x.sigmoid()).sum(), x, create_graph=True)
    h, = sf.autograd.grad(g.sum(), x)
    assert g.dtype == sf.float32 and h.dtype == sf.float32
