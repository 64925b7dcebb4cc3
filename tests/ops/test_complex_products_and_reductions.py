"""Complex matrix products' gradients (``g @ conj(other)``), complex ``mean``, ``var`` /
``std`` (real-valued: ``sum |x - mean|^2 / (n - correction)``), ``var_mean`` / ``std_mean``
and ``vdot`` (the first argument conjugated) against torch, forward and backward; also pow, addcmul, addcdiv, prod, cumprod, sgn (``z / |z|``), norms (of the moduli), matrix_power and
convolutions. Before session 37 the products' and prod/cumprod/sgn/conv gradients were silently
wrong (no conjugate; sgn's was 0), vdot returned ``sum(x * y)``, and mean/var/std/norms
raised for complex inputs (torch computes them)."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _c(rng, *shape):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def _np(t):
    return np.asarray(t.detach().resolve_conj().numpy())


CASES = {
    "mean": lambda L, x: x.mean(),
    "mean_dim": lambda L, x: x.mean(1, keepdim=True),
    "var": lambda L, x: x.var(),
    "var_dim0": lambda L, x: x.var(0, correction=0),
    "std": lambda L, x: x.std(1),
    "var_mean": lambda L, x: L.var_mean(x, 0)[0] + L.var_mean(x, 0)[1].abs(),
    "std_mean": lambda L, x: L.std_mean(x, 1, keepdim=True)[0] * 2,
    "prod": lambda L, x: x.prod(1),
    "cumprod": lambda L, x: x.cumprod(0),
    "sgn": lambda L, x: x.sgn(),
    "norm": lambda L, x: x.norm(),
    "vector_norm_1": lambda L, x: L.linalg.vector_norm(x, 1, dim=0),
    "matrix_power": lambda L, x: L.linalg.matrix_power(x[:, :3], 3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_complex_reduction_matches_torch(name):
    rng = np.random.default_rng(0)
    x = _c(rng, 3, 4)
    res = {}
    for lib in (torch, sf):
        t = lib.tensor(x, requires_grad=True)
        out = CASES[name](lib, t)
        gen = np.random.default_rng(5)  # the same cotangent for both libraries
        g = gen.standard_normal(tuple(out.shape)).astype(np.float32)
        g = g if not out.is_complex() else (g * (1 - 0.5j)).astype(np.complex64)
        out.backward(lib.tensor(g))
        res[lib] = (_np(out), _np(t.grad), str(out.dtype).split(".")[-1])
    assert res[sf][2] == res[torch][2], (res[sf][2], res[torch][2])
    np.testing.assert_allclose(res[sf][0], res[torch][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(res[sf][1], res[torch][1], rtol=1e-5, atol=1e-5)


def test_vdot_conjugates_the_first_argument_like_torch():
    rng = np.random.default_rng(1)
    x, y = _c(rng, 5), _c(rng, 5)
    res = {}
    for lib in (torch, sf):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = lib.vdot(a, b)
        out.backward(lib.tensor(np.complex64(0.5 - 2j)))
        res[lib] = [_np(t) for t in (out, a.grad, b.grad)]
    for s, t in zip(res[sf], res[torch], strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-5)


PRODUCTS = {  # name -> (call, input shapes)
    "mm": (lambda L, a, b: a @ b, ((3, 4), (4, 2))),
    "mv": (lambda L, a, b: a @ b, ((3, 4), (4,))),
    "dot": (lambda L, a, b: L.dot(a, b), ((4,), (4,))),
    "folded": (lambda L, a, b: a @ b, ((2, 3, 4), (4, 2))),
    "bmm": (lambda L, a, b: L.bmm(a, b), ((2, 3, 4), (2, 4, 2))),
    "matmul_bcast": (lambda L, a, b: L.matmul(a, b), ((2, 3, 4), (4,))),
    "linear": (lambda L, a, b: L.nn.functional.linear(a, b, b[0, :3]), ((2, 3, 4), (3, 4))),
    "einsum": (lambda L, a, b: L.einsum("bij,jk->bik", a, b), ((2, 3, 4), (4, 2))),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, 1), ((3, 4), (4, 2))),
    "conv2d": (lambda L, a, b: L.nn.functional.conv2d(a, b, padding=1), ((2, 2, 5, 5), (3, 2, 3, 3))),
    "conv1d_s2": (lambda L, a, b: L.nn.functional.conv1d(a, b, stride=2), ((2, 2, 7), (3, 2, 3))),
    "conv_transpose2d": (lambda L, a, b: L.nn.functional.conv_transpose2d(a, b, stride=2),
                         ((2, 2, 4, 4), (2, 3, 3, 3))),
    "pow_tensor": (lambda L, a, b: a ** b, ((3, 4), (3, 4))),
    "scalar_pow": (lambda L, a, b: 2 ** a + 0.5 ** b, ((3, 4), (3, 4))),
    "addcmul": (lambda L, a, b: L.addcmul(a, a, b, value=0.5 - 1j), ((3, 4), (3, 4))),
    "addcdiv": (lambda L, a, b: L.addcdiv(b, a, b, value=2j), ((3, 4), (3, 4))),
}


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_complex_product_gradients_conjugate_the_other_operand(name):
    """Gradients of complex products are ``g @ conj(other)`` (torch's convention); before
    session 37 the matmul family returned ``g @ other``: silent wrong gradients."""
    call, shapes = PRODUCTS[name]
    rng = np.random.default_rng(3)
    arrays = [_c(rng, *s) for s in shapes]
    res = {}
    for lib in (torch, sf):
        a, b = (lib.tensor(x, requires_grad=True) for x in arrays)
        out = call(lib, a, b)
        g = np.full(tuple(out.shape), 0.5 - 2j, np.complex64)
        out.backward(lib.tensor(g))
        res[lib] = [_np(t) for t in (out, a.grad, b.grad)]
    for s, t in zip(res[sf], res[torch], strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-5)


def test_complex_matmul_double_backward_matches_torch():
    rng = np.random.default_rng(4)
    x, y = _c(rng, 2, 3, 3), _c(rng, 3, 3)
    res = {}
    for lib in (torch, sf):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(y, requires_grad=True)
        out = a @ b
        ga, = lib.autograd.grad((out * out.conj()).real.sum(), a, create_graph=True)
        (ga * ga.conj()).real.sum().backward()
        res[lib] = [_np(ga), _np(b.grad)]
    for s, t in zip(res[sf], res[torch], strict=True):
        np.testing.assert_allclose(s, t, rtol=1e-5, atol=1e-5)


def test_sign_refuses_complex_like_torch():
    z = np.array([1 + 1j], np.complex64)
    with pytest.raises(NotImplementedError, match="Please use torch.sgn instead"):
        torch.sign(torch.tensor(z))
    with pytest.raises(NotImplementedError, match="Please use torch.sgn instead"):
        sf.sign(sf.tensor(z))


@pytest.mark.parametrize("name", ["pow_tensor", "addcmul", "addcdiv", "conv2d"])
def test_complex_double_backward_matches_torch(name):
    call, shapes = PRODUCTS[name]
    rng = np.random.default_rng(5)
    arrays = [_c(rng, *s) for s in shapes]
    res = {}
    for lib in (torch, sf):
        a, b = (lib.tensor(x, requires_grad=True) for x in arrays)
        out = call(lib, a, b)
        ga, = lib.autograd.grad((out * out.conj()).real.sum(), a, create_graph=True)
        (ga * ga.conj()).real.sum().backward()
        res[lib] = [_np(ga), _np(b.grad)]
    for s, t in zip(res[sf], res[torch], strict=True):
        np.testing.assert_allclose(s, t, rtol=2e-5, atol=2e-5)
