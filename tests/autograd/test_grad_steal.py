"""The engine adopts a leaf's incoming gradient array as ``.grad`` when nobody else can see
it (PyTorch's AccumulateGrad "steal"), and copies it otherwise. Each aliasing case changes
``.grad`` in place afterwards, as optimizers and in-place reduces do, and checks that no
other tensor's value moved; the values are compared with PyTorch."""

import weakref

import numpy as np
import torch

import shardflow as sf
from shardflow.autograd.function import Function


def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


class Fresh(Function):
    """``2 * a`` whose backward returns a new array (``2 * g``) and keeps a weak reference
    to it, so a test can tell whether ``.grad`` is that very array."""

    made: list = []

    def forward(self, a, dtype=None):
        self.dtype = dtype
        return a * 2

    def backward(self, g):
        out = (g * 2) if self.dtype is None else (g * 2).astype(self.dtype)
        Fresh.made.append(weakref.ref(out))
        return out


class ReturnsArray(Function):
    """``a * 0 + sum(k)``-like op whose backward returns ``self.k`` itself: an array the
    node holds (and, when ``k`` is another tensor's array, that tensor too)."""

    def forward(self, a, k):
        self.k = k
        return a * 0

    def backward(self, g):
        return self.k, None


class ReturnsView(Function):
    """Backward returns a view into an array the node keeps."""

    def forward(self, a):
        self.buf = np.ones((2,) + a.shape, a.dtype)
        return a * 1

    def backward(self, g):
        return self.buf[0]


def test_a_fresh_gradient_is_adopted_without_a_copy():
    Fresh.made.clear()
    a, _ = _pair((3, 4))
    Fresh.apply(a).sum().backward()
    assert Fresh.made[-1]() is a.grad.array  # old engine: a copy, the weak ref is dead
    np.testing.assert_array_equal(a.grad.numpy(), np.full((3, 4), 2, np.float32))


def test_linear_weight_gradient_is_adopted():
    w, tw = _pair((4, 3))
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    y = sf.nn.functional.linear(sf.tensor(x), w)
    refs = []
    w.register_hook(lambda g: refs.append(weakref.ref(g.array)))
    y.pow(2).sum().backward()
    assert refs[0]() is w.grad.array
    torch.nn.functional.linear(torch.tensor(x), tw).pow(2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-5)


def test_a_gradient_cast_to_the_leaf_dtype_is_adopted_with_the_leaf_dtype():
    Fresh.made.clear()
    a, _ = _pair((3,))
    Fresh.apply(a, dtype=np.float64).sum().backward()
    assert a.grad.array.dtype == np.float32 and a.grad.array.flags.c_contiguous
    np.testing.assert_array_equal(a.grad.numpy(), np.full(3, 2, np.float32))


def test_two_leaves_fed_by_one_add_get_separate_arrays():
    # mul's backward makes g * c fresh; add's hands that one array to both leaves
    a, ta = _pair((5,), 0)
    b, tb = _pair((5,), 1)
    c = np.arange(5, dtype=np.float32)
    ((a + b) * sf.tensor(c)).sum().backward()
    ((ta + tb) * torch.tensor(c)).sum().backward()
    assert not np.shares_memory(a.grad.array, b.grad.array)
    a.grad.array *= 10  # an optimizer / reduce changing one gradient in place
    np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())
    np.testing.assert_array_equal(a.grad.numpy(), 10 * ta.grad.numpy())


def test_in_place_post_accumulate_hook_on_one_add_input_leaves_the_other():
    a, ta = _pair((4,), 0)
    b, tb = _pair((4,), 1)
    def triple(t):  # as DDP's / FSDP's in-place reduce does from this hook
        t.grad.mul_(3)

    a.register_post_accumulate_grad_hook(triple)
    ta.register_post_accumulate_grad_hook(triple)
    c = np.arange(4, dtype=np.float32)
    ((a + b) * sf.tensor(c)).sum().backward()  # one array for both leaves (add)
    ((ta + tb) * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


def test_a_leaf_used_twice_gets_the_sum_of_both_paths():
    a, ta = _pair((4,))
    b, tb = _pair((4,), 2)
    y = (a + a) * b
    ty = (ta + ta) * tb
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
    a.grad.array += 1
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)


def test_a_hook_that_keeps_the_gradient_does_not_see_grad_change():
    a, ta = _pair((3,))
    kept, kept_arrays, tkept = [], [], []
    a.register_hook(lambda g: kept.append(g))
    a.register_hook(lambda g: kept_arrays.append(g.array))
    ta.register_hook(lambda g: tkept.append(g))
    (a * 3).sum().backward()
    (ta * 3).sum().backward()
    a.grad.array += 100
    np.testing.assert_array_equal(kept[0].numpy(), tkept[0].numpy())
    np.testing.assert_array_equal(kept_arrays[0], tkept[0].numpy())


def test_a_retained_non_leaf_gradient_is_not_shared_with_a_leaf():
    a, ta = _pair((3,), 0)
    b, tb = _pair((3,), 1)
    y, ty = a + b, ta + tb
    y.retain_grad()
    ty.retain_grad()
    (y * 2).sum().backward()
    (ty * 2).sum().backward()
    a.grad.array += 7
    b.grad.array -= 7
    np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy() - 7)


def test_retain_graph_twice_accumulates_after_in_place_change():
    a, ta = _pair((3,))
    loss, tloss = (a * 3).sum(), (ta * 3).sum()
    loss.backward(retain_graph=True)
    tloss.backward(retain_graph=True)
    a.grad.array *= 10
    with torch.no_grad():
        ta.grad *= 10
    loss.backward()
    tloss.backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())


def test_retain_graph_gradient_the_node_keeps_is_copied():
    # the node returns the same array it holds on every backward
    a, _ = _pair((3,))
    k = np.arange(3, dtype=np.float32) + 1
    y = ReturnsArray.apply(a, k.copy()).sum()
    y.backward(retain_graph=True)
    a.grad.array *= 10
    y.backward()
    np.testing.assert_array_equal(a.grad.numpy(), 10 * k + k)


def test_a_gradient_that_is_another_tensors_array_is_copied():
    a, _ = _pair((3,))
    k = sf.tensor(np.arange(3, dtype=np.float32))
    ReturnsArray.apply(a, k.array).sum().backward()
    assert a.grad.array is not k.array
    a.grad.array += 5
    np.testing.assert_array_equal(k.numpy(), np.arange(3, dtype=np.float32))


def test_a_gradient_that_is_a_view_is_copied():
    a, _ = _pair((3,))
    ReturnsView.apply(a).sum().backward()
    assert a.grad.array.base is None and a.grad.array.flags.writeable
    a.grad.array += 1
    np.testing.assert_array_equal(a.grad.numpy(), np.full(3, 2, np.float32))


def test_broadcast_gradient_of_sum_is_copied_writeable():
    a, ta = _pair((2, 3))
    a.sum().backward()
    ta.sum().backward()
    a.grad.array += 1  # the incoming gradient is a read-only broadcast view
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy() + 1)


def test_accumulating_two_backwards_keeps_each_graph_correct():
    Fresh.made.clear()
    a, ta = _pair((4,))
    Fresh.apply(a).sum().backward()
    first = a.grad.array
    Fresh.apply(a).sum().backward()
    assert a.grad.array is first  # accumulated in place, the second array not adopted
    (ta * 2).sum().backward()
    (ta * 2).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())


def test_backward_with_inputs_gives_each_input_its_own_array():
    a, ta = _pair((3,), 0)
    b, tb = _pair((3,), 1)
    (a + b).sum().backward(inputs=[a, b])  # old code: both .grad were one read-only view
    (ta + tb).sum().backward(inputs=[ta, tb])
    assert not np.shares_memory(a.grad.array, b.grad.array)
    a.grad.array += 1
    np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy() + 1)


def test_create_graph_grad_that_needs_no_graph_is_a_private_copy():
    """create_graph=True (autograd/higher_order.py): a constant gradient (here the same
    array for both inputs of add) is copied into each .grad, as the first-order engine does."""
    a, _ = _pair((3,))
    b, _ = _pair((3,), seed=1)
    (a + b).sum().backward(create_graph=True)
    assert not np.shares_memory(a.grad.array, b.grad.array)
    a.grad.array += 1
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(3))
