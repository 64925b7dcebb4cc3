"""``torch.autograd.functional`` (shardflow/autograd/functional.py) against torch's: values,
result structure (tensor vs tuples), the strict mode and ``v`` checks. Second-order results
are compared at 1e-8 (exact by double backward, or differences of exact gradients where an op
lacks a second derivative: see the module docstring); first-order ones at float64 rounding.
``create_graph=True`` is tested in test_higher_order_functional.py."""

import numpy as np
import pytest
import torch

import shardflow as sf

SF, TF = sf.autograd.functional, torch.autograd.functional


def _lib_inputs(*arrays):
    return tuple(sf.tensor(a) for a in arrays), tuple(torch.tensor(a) for a in arrays)


def _close(got, want, atol):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), (type(got), len(want))
        for g, w in zip(got, want):
            _close(g, w, atol)
        return
    assert isinstance(got, sf.Tensor), type(got)
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    assert not got.requires_grad
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), atol=atol, rtol=0)


def _f_two(lib):
    return lambda x, y: ((x ** 2).unsqueeze(1) * y.sin()).tanh()  # (3,) x (3, 2) -> (3, 2)


def _f_scalar(lib):
    return lambda x, y: (x.exp() * y.sum(1)).sum() + (x ** 3).sum() * y.cos().sum()


RNG = np.random.default_rng(0)
X, Y, W = RNG.standard_normal(3), RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2))


@pytest.mark.parametrize("single", [True, False])
def test_jacobian_matches_torch(single):
    (sx, sy), (tx, ty) = _lib_inputs(X, Y)
    if single:
        got = SF.jacobian(lambda x: x.exp() * x.sum(), sx)
        want = TF.jacobian(lambda x: x.exp() * x.sum(), tx)
    else:
        got = SF.jacobian(_f_two(sf), (sx, sy), vectorize=True)
        want = TF.jacobian(_f_two(torch), (tx, ty))
    _close(got, want, 1e-12)


def test_jacobian_of_several_outputs_is_nested_like_torch():
    (sx, sy), (tx, ty) = _lib_inputs(X, Y)
    got = SF.jacobian(lambda x, y: (x * 2, y.sum()), (sx, sy))
    want = TF.jacobian(lambda x, y: (x * 2, y.sum()), (tx, ty))
    _close(got, want, 1e-12)  # includes the zero blocks of independent pairs


def test_vjp_and_jvp_match_torch():
    (sx, sy, sw), (tx, ty, tw) = _lib_inputs(X, Y, W)
    _close(SF.vjp(_f_two(sf), (sx, sy), sw), TF.vjp(_f_two(torch), (tx, ty), tw), 1e-12)
    (sv, su), (tv, tu) = _lib_inputs(RNG.standard_normal(3), RNG.standard_normal((3, 2)))
    _close(SF.jvp(_f_two(sf), (sx, sy), (sv, su)), TF.jvp(_f_two(torch), (tx, ty), (tv, tu)), 1e-12)
    s1, t1 = _lib_inputs(np.array([0.7]))
    _close(SF.jvp(lambda a: a.exp() * 3, s1[0]), TF.jvp(lambda a: a.exp() * 3, t1[0]), 1e-12)
    _close(SF.vjp(lambda a: (a ** 2).sum(), sx), TF.vjp(lambda a: (a ** 2).sum(), tx), 1e-12)


def test_hessian_hvp_vhp_match_torch():
    (sx, sy), (tx, ty) = _lib_inputs(X, Y)
    _close(SF.hessian(_f_scalar(sf), (sx, sy)), TF.hessian(_f_scalar(torch), (tx, ty)), 1e-8)
    _close(SF.hessian(lambda x: (x.sin() * x.sum()).sum(), sx),
           TF.hessian(lambda x: (x.sin() * x.sum()).sum(), tx), 1e-8)
    (sv, su), (tv, tu) = _lib_inputs(RNG.standard_normal(3), RNG.standard_normal((3, 2)))
    _close(SF.hvp(_f_scalar(sf), (sx, sy), (sv, su)), TF.hvp(_f_scalar(torch), (tx, ty), (tv, tu)), 1e-8)
    _close(SF.vhp(_f_scalar(sf), (sx, sy), (sv, su)), TF.vhp(_f_scalar(torch), (tx, ty), (tv, tu)), 1e-8)


def test_float32_inputs_keep_their_dtype():
    x = sf.tensor(X.astype(np.float32))
    h = SF.hessian(lambda a: (a ** 3).sum(), x)
    assert h.dtype == sf.float32
    np.testing.assert_allclose(h.numpy(), np.diag(6 * X.astype(np.float32)), atol=1e-5)
    assert SF.jacobian(lambda a: a * 2, x).dtype == sf.float32


def test_caller_graph_and_inputs_are_untouched():
    x = sf.tensor(X, requires_grad=True)
    SF.jacobian(lambda a: a ** 2, x)
    assert x.grad is None


def test_strict_mode_and_independent_outputs():
    (sx, sy), (tx, ty) = _lib_inputs(X, Y)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        SF.jacobian(lambda x, y: x * 2, (sx, sy), strict=True)
    with pytest.raises(RuntimeError, match="is independent of input 1"):
        TF.jacobian(lambda x, y: x * 2, (tx, ty), strict=True)
    _close(SF.jacobian(lambda x, y: x * 2, (sx, sy)), TF.jacobian(lambda x, y: x * 2, (tx, ty)), 0)


def test_argument_errors_follow_torch():
    (sx, _), _ = _lib_inputs(X, Y)
    with pytest.raises(RuntimeError, match="can only be None"):
        SF.vjp(lambda a: a * 2, sx)
    with pytest.raises(RuntimeError, match="can only be None"):
        SF.jvp(lambda a: a * 2, sx)
    with pytest.raises(RuntimeError, match="invalid size"):
        SF.vjp(lambda a: a * 2, sx, sf.ones(4))
    with pytest.raises(RuntimeError, match="single element"):
        SF.hessian(lambda a: a * 2, sx)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        SF.jacobian(lambda a: a, [1.0])
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        SF.hvp(lambda a: (a ** 2).sum(), [sx, 1.0], create_graph=True)
