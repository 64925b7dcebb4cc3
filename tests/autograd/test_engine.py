"""The backward engine: accumulation, graph freeing, hooks, grad modes, autograd.grad,
in-place checks and activation checkpointing — each compared with PyTorch."""

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow import autograd


def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def test_grad_accumulates_across_backward_calls():
    a, ta = _pair((3,))
    for _ in range(2):
        (a * a).sum().backward()
        (ta * ta).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


def test_diamond_graph_sums_both_paths():
    a, ta = _pair((4,))
    b = a * 2
    c = b * b + b * 3
    tb = ta * 2
    tc = tb * tb + tb * 3
    c.sum().backward()
    tc.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


def test_second_backward_without_retain_graph_raises():
    a, _ = _pair((2,))
    y = (a * a).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    a, ta = _pair((2,))
    y = (a * a).sum()
    y.backward(retain_graph=True)
    y.backward()
    ty = (ta * ta).sum()
    ty.backward(retain_graph=True)
    ty.backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())


def test_non_scalar_backward_needs_gradient():
    a, _ = _pair((2, 3))
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (a * 2).backward()
    g = np.ones((2, 3), np.float32)
    (a * 2).backward(sf.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), 2 * g)


def test_no_grad_and_decorator_and_enable_grad():
    a, _ = _pair((2,))
    with sf.no_grad():
        assert not (a * 2).requires_grad
        with sf.enable_grad():
            assert (a * 2).requires_grad

    @sf.no_grad()
    def f(x):
        return x * 3

    assert not f(a).requires_grad
    assert (a * 2).requires_grad
    with sf.inference_mode():
        assert not (a * 2).requires_grad
    assert sf.is_grad_enabled()


def test_tensor_hook_modifies_gradient_like_torch():
    a, ta = _pair((3,))
    b, tb = a * 2, ta * 2
    b.register_hook(lambda g: g * 10)
    tb.register_hook(lambda g: g * 10)
    (b * b).sum().backward()
    (tb * tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


def test_leaf_hook_and_post_accumulate_hook_order():
    a, _ = _pair((3,))
    events = []
    a.register_hook(lambda g: events.append(("hook", a.grad is None)))
    a.register_post_accumulate_grad_hook(lambda t: events.append(("post", t.grad is not None)))
    (a * a + a * 2).sum().backward()
    # one hook call and one post-accumulate call per backward, after the whole grad arrived
    assert events == [("hook", True), ("post", True)]


def test_retain_grad_on_intermediate():
    a, ta = _pair((3,))
    b, tb = a * 3, ta * 3
    b.retain_grad()
    tb.retain_grad()
    (b * b).sum().backward()
    (tb * tb).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)  # flows on past b


def test_retain_grad_sees_the_hooks_gradient_whatever_the_order():
    """PyTorch runs retain_grad's hook after every other tensor hook (registered before or
    after it), so ``.grad`` is the hooked gradient; the gradient flowing on is hooked too."""
    got = {}
    for name, lib, (a, ta) in (("sf", sf, _pair((2,))), ("torch", torch, _pair((2,)))):
        x = a if lib is sf else ta
        y, z = x * 2, x * 3
        y.retain_grad()
        y.register_hook(lambda g: g * 10)   # after retain_grad
        z.register_hook(lambda g: g + 1)    # before retain_grad
        z.retain_grad()
        (y * y + z * z).sum().backward()
        got[name] = [t.numpy().copy() for t in (y.grad, z.grad, x.grad)]
    for mine, theirs in zip(got["sf"], got["torch"], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6)


def test_autograd_grad_does_not_touch_dot_grad():
    a, ta = _pair((3,))
    b, tb = a * a, ta * ta
    (g,) = autograd.grad(b.sum(), [a])
    (tg,) = torch.autograd.grad(tb.sum(), [ta])
    np.testing.assert_allclose(g.numpy(), tg.numpy())
    assert a.grad is None


def test_autograd_grad_wrt_intermediate():
    a, ta = _pair((3,))
    b, tb = a * 2, ta * 2
    (g,) = autograd.grad((b * b).sum(), [b])
    (tg,) = torch.autograd.grad((tb * tb).sum(), [tb])
    np.testing.assert_allclose(g.numpy(), tg.numpy())


def test_autograd_grad_unused_input():
    a, _ = _pair((3,))
    c, _ = _pair((3,), 1)
    with pytest.raises(RuntimeError, match="not have been used"):
        autograd.grad((a * 2).sum(), [c])
    assert autograd.grad((a * 2).sum(), [c], allow_unused=True) == (None,)


def test_inplace_on_leaf_requiring_grad_raises():
    a, _ = _pair((3,))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a.add_(1)
    with sf.no_grad():
        a.add_(1)  # allowed under no_grad, as in PyTorch


def test_inplace_change_of_saved_tensor_is_detected():
    a, _ = _pair((3,))
    b = a * 1.0
    c = b * b  # saves b
    with sf.no_grad():
        b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_inplace_rebase_on_intermediate_matches_torch():
    a, ta = _pair((3,))
    b, tb = a * 2, ta * 2
    b += a
    tb += ta
    b *= 3
    tb *= 3
    b.sum().backward()
    tb.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())


def test_broadcast_gradient_reduction():
    a, ta = _pair((3, 1))
    b, tb = _pair((1, 4), 1)
    (a * b).sum().backward()
    (ta * tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5)


def test_leaf_grads_do_not_alias():
    # add's backward hands the same array to both inputs; scaling one .grad in place
    # (as clip_grad_norm_ does) must not change the other.
    a, _ = _pair((3,))
    b, _ = _pair((3,), 1)
    (a + b).sum().backward()
    with sf.no_grad():
        a.grad.mul_(5)
    np.testing.assert_allclose(b.grad.numpy(), np.ones(3))


def test_activation_checkpoint_matches_plain_backward():
    a, _ = _pair((4,))
    w, _ = _pair((4,), 3)

    def block(x):
        return (x * w) * (x * w) + x

    out = sf.utils.checkpoint.checkpoint(block, a * 1.0, use_reentrant=False)
    out.sum().backward()
    ga, gw = a.grad.numpy().copy(), w.grad.numpy().copy()
    a.grad = w.grad = None
    block(a * 1.0).sum().backward()
    np.testing.assert_allclose(ga, a.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gw, w.grad.numpy(), rtol=1e-6)


def test_detach_and_requires_grad_flags():
    a, _ = _pair((2,))
    d = a.detach()
    assert not d.requires_grad and d.is_leaf
    assert np.shares_memory(d.numpy(), a.numpy())
    b = a * 2
    assert not b.is_leaf and b.grad_fn is not None
    with pytest.raises(RuntimeError, match="only floating point"):
        sf.tensor([1, 2]).requires_grad_()


def test_backward_from_two_outputs_of_one_split_matches_torch():
    # Two roots made by the same multi-output Function: its edges must be counted once,
    # or the leaf never receives its gradient.
    import torch

    x0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = sf.tensor(x0, requires_grad=True)
    a, b = sf.split(x, 2, 1)
    sf.autograd.backward([a, b], [sf.ones(3, 2), sf.full((3, 2), 3.0)])
    xt = torch.tensor(x0, requires_grad=True)
    at, bt = torch.split(xt, 2, 1)
    torch.autograd.backward([at, bt], [torch.ones(3, 2), torch.full((3, 2), 3.0)])
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
