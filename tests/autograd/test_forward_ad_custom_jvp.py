"""Forward-mode AD as pytorch/tutorials' forward_ad_usage uses it, against torch 2.13:
``make_dual`` keeps a tangent laid out like the primal as is (``unpack_dual(d).tangent is
tangent``) and copies any other into the primal's dtype; a custom Function with only ``jvp``
gives its outputs the tangents its ``jvp`` returns (and refuses reverse mode as torch does);
``gradcheck(check_forward_ad=True)`` checks forward-mode Jacobians."""

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import shardflow as sf
import shardflow.autograd.forward_ad as sfw

LIBS = [(torch, tfw), (sf, sfw)]


@pytest.mark.parametrize("lib, fw", LIBS)
def test_make_dual_keeps_a_tangent_of_the_primals_layout(lib, fw):
    primal = lib.tensor(np.arange(12.0).reshape(3, 4), dtype=lib.float64)
    same = lib.ones(3, 4)  # float32 on a float64 primal: kept as it is in torch too
    with fw.dual_level():
        assert fw.unpack_dual(fw.make_dual(primal, same)).tangent is same
        transposed = lib.ones(4, 3).T
        copied = fw.unpack_dual(fw.make_dual(primal, transposed)).tangent
        assert copied is not transposed and copied.dtype == lib.float64
        assert copied.is_contiguous() and copied.tolist() == transposed.tolist()
        wider = lib.zeros(2, 3, 4)[0]  # a view of a larger storage: copied
        assert fw.unpack_dual(fw.make_dual(primal, wider)).tangent is not wider
        later = lib.zeros(3, 4)
        dual = fw.make_dual(primal, later)
        later.add_(2)  # the tangent is the caller's tensor: the change shows
        assert fw.unpack_dual(dual).tangent.tolist() == [[2.0] * 4] * 3


def _exp_jvp_only(lib):
    class Fn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            result = lib.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, gI):
            gO = gI * ctx.result
            del ctx.result
            return gO

    return Fn


@pytest.mark.parametrize("requires_grad", [False, True])
def test_jvp_only_function_tangent_like_torch(requires_grad):
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    v = np.arange(6.0).reshape(2, 3) / 7
    results = []
    for lib, fw in LIBS:
        fn = _exp_jvp_only(lib)
        primal = lib.tensor(x, requires_grad=requires_grad)
        with fw.dual_level():
            out = fn.apply(fw.make_dual(primal, lib.tensor(v)))
            tangent = fw.unpack_dual(out).tangent
            downstream = fw.unpack_dual((out * 3).sin()).tangent  # the tangent flows on
        results.append((out.detach().numpy(), tangent.detach().numpy(), downstream.detach().numpy()))
    for s, t in zip(results[1], results[0]):
        np.testing.assert_allclose(s, t, rtol=1e-12)


def test_jvp_only_function_refuses_backward_like_torch():
    for lib, fw in LIBS:
        fn = _exp_jvp_only(lib)
        primal = lib.tensor([0.5, 1.0], requires_grad=True)
        with fw.dual_level():
            out = fn.apply(fw.make_dual(primal, lib.ones(2)))
            with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
                out.sum().backward()


def test_jvp_only_function_outside_a_level_is_plain():
    fn = _exp_jvp_only(sf)
    y = fn.apply(sf.tensor([0.0, 1.0]))
    np.testing.assert_allclose(y.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


@pytest.mark.parametrize("lib, fw", LIBS)
def test_gradcheck_forward_ad_passes_and_fails_like_torch(lib, fw):
    primal = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=lib.float64, requires_grad=True)
    fn = _exp_jvp_only(lib)
    assert lib.autograd.gradcheck(fn.apply, (primal,), check_forward_ad=True, check_backward_ad=False,
                                  check_undefined_grad=False, check_batched_grad=False)

    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * a

        @staticmethod
        def jvp(ctx, g):
            return 3 * g  # not 2a g

    with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch for output 0 with respect "
                                           "to input 0"):
        lib.autograd.gradcheck(Wrong.apply, (primal,), check_forward_ad=True, check_backward_ad=False,
                               check_undefined_grad=False, check_batched_grad=False)
    assert not lib.autograd.gradcheck(Wrong.apply, (primal,), check_forward_ad=True, check_backward_ad=False,
                                      check_undefined_grad=False, check_batched_grad=False, raise_exception=False)


@pytest.mark.parametrize("lib, fw", LIBS)
def test_gradcheck_forward_ad_on_ordinary_ops(lib, fw):
    a = lib.tensor([[0.3, -1.2], [2.0, 0.7]], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([0.5, -0.25], dtype=lib.float64, requires_grad=True)
    assert lib.autograd.gradcheck(lambda a, b: (a @ b).tanh() + a.sum(), (a, b), check_forward_ad=True)
