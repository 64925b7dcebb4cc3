"""PyTorch-style custom autograd Functions (``autograd/custom_function.py``): each class is
defined once per library (``make(lib)``) and the same program runs on shardflow and on
torch 2.13, comparing values, gradients, what backward receives and the errors."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

LIBS = [sf, torch]
X = np.array([[0.5, -1.25, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def leaf(lib, a=X, dtype=None):
    return lib.tensor(a, dtype=dtype, requires_grad=True)


def both(program):
    """``program(lib)`` on both libraries; the results side by side."""
    return program(sf), program(torch)


def assert_close(a, b, **kw):
    if a is None or b is None:
        assert a is None and b is None, (a, b)
        return
    np.testing.assert_allclose(np.asarray(a.detach()), b.detach().numpy(), rtol=1e-6, atol=1e-6, **kw)


# ----------------------------------------------------------------------------- basics


def make_square(lib):
    class Sq(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    return Sq


def test_square_values_gradients_and_node():
    def program(lib):
        Sq = make_square(lib)
        x = leaf(lib)
        y = Sq.apply(x)
        seen = (type(y.grad_fn).__name__, y.grad_fn.name(), y.requires_grad, y.is_leaf,
                isinstance(y.grad_fn, lib.autograd.function.FunctionCtx),
                isinstance(y.grad_fn, lib.autograd.function.BackwardCFunction),
                type(y.grad_fn)._forward_cls is Sq)
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y, x.grad, seen

    (y1, g1, s1), (y2, g2, s2) = both(program)
    assert_close(y1, y2)
    assert_close(g1, g2)
    assert s1 == s2 == ("SqBackward", "SqBackward", True, False, True, True, True)


def test_ctx_is_the_node_and_keeps_attributes_and_needs_input_grad():
    def program(lib):
        seen = {}

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, w, k, bias=0.0):
                ctx.k = k
                ctx.bias = bias
                ctx.ctx_id = id(ctx)
                seen["forward"] = (ctx.needs_input_grad, lib.is_grad_enabled())
                return x * w * k + bias

            @staticmethod
            def backward(ctx, g):
                seen["backward"] = (ctx.needs_input_grad, ctx.k, ctx.bias, lib.is_grad_enabled(),
                                    g.requires_grad)
                return g * 2 * ctx.k, None, None, None  # bias=1.0 passed by keyword counts

        x = leaf(lib)
        y = Scale.apply(x, lib.ones(3), 3, bias=1.0)
        seen["ctx"] = id(y.grad_fn) == y.grad_fn.ctx_id
        y.sum().backward()
        with lib.no_grad():
            z = Scale.apply(x, lib.ones(3), 2)
        seen["no_grad"] = (z.requires_grad, z.grad_fn is None)
        return y, x.grad, seen

    (y1, g1, s1), (y2, g2, s2) = both(program)
    assert_close(y1, y2)
    assert_close(g1, g2)
    assert s1 == s2
    assert s1["forward"] == ((True, False, False), False)  # the no_grad call, last
    assert s1["backward"] == ((True, False, False, False), 3, 1.0, False, False)


def test_keyword_arguments_take_their_parameter_position_like_torch():
    def program(lib):
        seen = []

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, w=None, k=1, kw=2):
                seen.append(ctx.needs_input_grad)
                return x * w * k * kw

            @staticmethod
            def backward(ctx, g):
                return (g, g * 5) + (None,) * (len(ctx.needs_input_grad) - 2)

        x, w = leaf(lib), leaf(lib)
        F.apply(x, w=w).sum().backward()
        F.apply(x, kw=3, k=2, w=w).sum().backward()
        with pytest.raises(TypeError, match=r"forward\(\) missing required argument: 'k' \(position 2\)"):
            F.apply(x, w, kw=3)
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            F.apply(x, nope=3)
        return x.grad, w.grad, seen

    (a1, b1, s1), (a2, b2, s2) = both(program)
    assert_close(a1, a2)
    assert_close(b1, b2)
    assert s1 == s2 == [(True, True), (True, True, False, False)]


def test_non_static_forward_taking_ctx_works_as_in_torch():
    def program(lib):
        class Twice(lib.autograd.Function):
            def forward(ctx, x):
                return x * 2

            def backward(ctx, g):
                return g * 2

        x = leaf(lib)
        Twice.apply(x).sum().backward()
        return x.grad

    assert_close(*both(program))


def test_non_static_forward_using_the_ctx_api_through_self_works_as_in_torch():
    def program(lib):
        class Cube(lib.autograd.Function):
            def forward(self, x):
                self.save_for_backward(x)
                return x ** 3

            def backward(self, g):
                x, = self.saved_tensors
                return 3 * x * x * g

        x = leaf(lib)
        y = Cube.apply(x)
        y.sum().backward()
        return y, x.grad

    (y1, g1), (y2, g2) = both(program)
    assert_close(y1, y2)
    assert_close(g1, g2)


def test_setup_context_style_binds_defaults_like_torch():
    def program(lib):
        seen = {}

        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(x, k=3.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                seen["inputs"] = (len(inputs), inputs[1], tuple(output.shape))
                ctx.save_for_backward(inputs[0])
                seen["saved_in_setup"] = ctx.saved_tensors  # torch packs them after forward
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * ctx.k + 0 * x, None

        x = leaf(lib)
        y = Mul.apply(x)
        (y ** 2).sum().backward()
        return x.grad, seen

    (g1, s1), (g2, s2) = both(program)
    assert_close(g1, g2)
    assert s1 == s2 == {"inputs": (2, 3.0, (2, 3)), "saved_in_setup": ()}


def test_vjp_instead_of_backward_and_vmap_rule_are_accepted():
    def program(lib):
        class Cube(lib.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def vjp(ctx, g):
                x, = ctx.saved_tensors
                return 3 * x * x * g

            @staticmethod
            def jvp(ctx, t):  # forward-mode: accepted, unused by backward
                raise AssertionError("not called by backward")

            @staticmethod
            def vmap(info, in_dims, x):
                raise AssertionError("not called by backward")

        x = leaf(lib)
        Cube.apply(x).sum().backward()
        return x.grad

    assert_close(*both(program))


def test_public_names_of_torch_autograd_function():
    names = ["Function", "FunctionCtx", "InplaceFunction", "BackwardCFunction", "once_differentiable"]
    for name in names:
        assert hasattr(torch.autograd.function, name)
        assert hasattr(sf.autograd.function, name), name
    assert sf.autograd.function.Function is sf.autograd.Function

    for lib in LIBS:
        class Half(lib.autograd.function.InplaceFunction):
            @staticmethod
            def forward(ctx, x):
                return x / 2

            @staticmethod
            def backward(ctx, g):
                return g / 2

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            assert Half(inplace=True).inplace is True
        x = leaf(lib)
        Half.apply(x).sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad), np.full(X.shape, 0.5))


# ----------------------------------------------------------------------------- outputs


def test_several_outputs_non_differentiable_non_tensor_and_integer_outputs():
    def program(lib):
        seen = []

        class Multi(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                i = x.argmax()
                ctx.mark_non_differentiable(i)
                return x * 2, i, 5, x * 3, (x > 0).long()

            @staticmethod
            def backward(ctx, g1, gi, g5, g3, glong):
                seen.append([None if g is None else (g.tolist(), str(g.dtype).split(".")[-1])
                             for g in (g1, gi, g5, g3, glong)])
                return g1 * 2 + g3 * 3

        x = leaf(lib)
        outs = Multi.apply(x)
        kinds = [(type(o).__name__, getattr(o, "requires_grad", None)) for o in outs]
        same_node = outs[0].grad_fn is outs[3].grad_fn
        outs[0].sum().backward(retain_graph=True)
        outs[3].sum().backward()
        return x.grad, seen, kinds, same_node, outs[1].grad_fn is None

    (g1, s1, k1, n1, f1), (g2, s2, k2, n2, f2) = both(program)
    assert_close(g1, g2)
    assert s1 == s2
    assert k1 == k2 and n1 == n2 is True and f1 == f2 is True


def test_materialize_grads_false_passes_none():
    def program(lib):
        seen = []

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1 is None, g2 is None))
                return (0 if g1 is None else g1 * 2) + (0 if g2 is None else g2 * 3)

        x = leaf(lib)
        a, b = Two.apply(x)
        b.sum().backward()
        a2, b2 = Two.apply(x)
        (a2 + b2).sum().backward()
        return x.grad, seen

    (g1, s1), (g2, s2) = both(program)
    assert_close(g1, g2)
    assert s1 == s2 == [(True, False), (False, False)]


def test_input_returned_as_is_is_a_new_tensor_sharing_memory():
    def program(lib):
        class Id(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 3

        x = leaf(lib)
        y = Id.apply(x)
        facts = (y is x, y.requires_grad, y.grad_fn is not None, y.data_ptr() == x.data_ptr())
        y.sum().backward()
        c = lib.ones(3)
        z = Id.apply(c)
        facts += (z is c, z.requires_grad, z.data_ptr() == c.data_ptr())
        return x.grad, facts

    (g1, f1), (g2, f2) = both(program)
    assert_close(g1, g2)
    assert f1 == f2 == (False, True, True, True, False, False, True)


def test_mark_dirty_returns_the_input_changed_in_place_with_new_history():
    def program(lib):
        class Double_(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                x.mul_(2)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf(lib)
        a = x * 1
        b = Double_.apply(a)
        facts = (b is a, type(a.grad_fn).__name__)
        (b * b).sum().backward()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place operation"):
            Double_.apply(leaf(lib))
        return b, x.grad, facts

    (b1, g1, f1), (b2, g2, f2) = both(program)
    assert_close(b1, b2)
    assert_close(g1, g2)
    assert f1 == f2 == (True, "Double_Backward")


# ----------------------------------------------------------------------------- saved tensors


@pytest.mark.parametrize("which", ["input", "output"])
def test_saved_tensor_changed_in_place_raises_torch_error(which):
    for lib in LIBS:
        class Save(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.save_for_backward(x if which == "input" else y)
                return y

            @staticmethod
            def backward(ctx, g):
                s, = ctx.saved_tensors
                return g * s

        x = leaf(lib)
        y = Save.apply(x)
        with lib.no_grad():
            (x if which == "input" else y).add_(1)
        origin = r"\], which is output 0 of Save," if which == "output" else r"\]"
        with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has "
                           r"been modified by an inplace operation: \[torch.FloatTensor \[2, 3\]" + origin
                           + " is at version 1; expected version 0 instead"):
            y.sum().backward()


def test_saved_output_and_intermediate_and_none():
    def program(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                half = x / 2
                ctx.save_for_backward(y, None, half)
                return y

            @staticmethod
            def backward(ctx, g):
                y, nothing, half = ctx.saved_tensors
                assert nothing is None
                return g * y + 0 * half

        x = leaf(lib)
        Exp.apply(x).sum().backward()
        return x.grad

    assert_close(*both(program))


def test_second_backward_fails_unless_retain_graph():
    for lib in LIBS:
        Sq = make_square(lib)
        x = leaf(lib)
        y = Sq.apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        np.testing.assert_allclose(np.asarray(x.grad), 4 * X, rtol=1e-6)
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()


# ----------------------------------------------------------------------------- errors


def test_save_for_backward_refuses_non_tensors():
    for lib in LIBS:
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x

        with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"):
            Bad.apply(leaf(lib))


@pytest.mark.parametrize("returned, message", [
    ("one", r"function BadBackward returned an incorrect number of gradients \(expected 2, got 1\)"),
    ("grad_for_int", "function BadBackward returned a gradient different than None at position 2, but the "
                     "corresponding forward input was not a Variable"),
    ("extra_nones", None),
])
def test_backward_result_checks(returned, message):
    for lib in LIBS:
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return {"one": g, "grad_for_int": (g, g), "extra_nones": (g * 2, None, None)}[returned]

        x = leaf(lib)
        if message is None:
            Bad.apply(x, 2).sum().backward()
            np.testing.assert_allclose(np.asarray(x.grad), np.full(X.shape, 2.0))
        else:
            with pytest.raises(RuntimeError, match=message):
                Bad.apply(x, 2).sum().backward()


def test_missing_backward_and_both_backward_and_vjp():
    for lib in LIBS:
        class NoBackward(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
            NoBackward.apply(leaf(lib)).sum().backward()

        class Both(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vjp(ctx, g):
                return g

        with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp' for a custom Function is not allowed"):
            Both.apply(leaf(lib)).sum().backward()


def test_old_style_instance_call_raises_torch_message():
    for lib in LIBS:
        Sq = make_square(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            f = Sq()
        with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"):
            f(leaf(lib))


def test_internal_functions_keep_their_array_apply():
    """The hook leaves shardflow's own ops alone: forward(self, *arrays) on raw arrays."""
    from shardflow.autograd.function import Function

    class ArrayTwice(Function):
        def forward(self, x):
            assert isinstance(x, np.ndarray)
            return x * 2

        def backward(self, g):
            return g * 2

    assert ArrayTwice.apply.__func__ is Function.apply.__func__

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    ops = [c for c in subclasses(Function) if c.__module__.startswith("shardflow.")]
    assert len(ops) > 100  # every op shardflow's import registered
    assert [c.__qualname__ for c in ops if hasattr(c, "_backward_cls")] == []
    assert not hasattr(ArrayTwice, "_backward_cls")
    x = leaf(sf)
    ArrayTwice.apply(x).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.full(X.shape, 2.0))


# ----------------------------------------------------------------------------- once_differentiable


def test_once_differentiable_first_order():
    def program(lib):
        class Sin(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            @lib.autograd.function.once_differentiable
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * x.cos()

        x = leaf(lib)
        Sin.apply(x).sum().backward()
        return x.grad

    assert_close(*both(program))


# ----------------------------------------------------------------------------- real programs


def make_gradient_reversal(lib):
    class GradReverse(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g.neg() * ctx.alpha, None

    return GradReverse


def make_straight_through_round(lib):
    class RoundSTE(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, g):
            return g

    return RoundSTE


def make_custom_clamp(lib):
    class Clamp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, lo, hi):
            ctx.save_for_backward(x)
            ctx.lo, ctx.hi = lo, hi
            return x.clamp(lo, hi)

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            inside = (x >= ctx.lo) & (x <= ctx.hi)
            return g * inside.to(g.dtype) + 0.1 * g * (~inside).to(g.dtype), None, None  # leaky

    return Clamp


def _train(lib, layer_fn, steps=4):
    """A tiny two-layer model with the custom Function between the layers, trained by SGD."""
    lib.manual_seed(0)
    w1 = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    w2 = lib.tensor(np.linspace(0.5, -0.5, 8, dtype=np.float32).reshape(4, 2), requires_grad=True)
    opt = lib.optim.SGD([w1, w2], lr=0.1)
    x = lib.tensor(X * 2)
    target = lib.tensor(np.array([[1.0, -1.0], [0.5, 0.0]], dtype=np.float32))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        h = layer_fn(lib, x @ w1)
        loss = ((h @ w2 - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, w1.detach(), w2.detach()


@pytest.mark.parametrize("layer", [
    lambda lib, h: make_gradient_reversal(lib).apply(h, 0.5),
    lambda lib, h: make_straight_through_round(lib).apply(h * 2) / 2,
    lambda lib, h: make_custom_clamp(lib).apply(h, -0.5, 0.75),
], ids=["gradient_reversal", "straight_through_round", "custom_clamp"])
def test_real_program_layers_train_like_torch(layer):
    (l1, a1, b1), (l2, a2, b2) = both(lambda lib: _train(lib, layer))
    np.testing.assert_allclose(l1, l2, rtol=1e-5)
    assert_close(a1, a2)
    assert_close(b1, b2)
    assert len(set(l1)) > 1  # the weights moved
