"""torch.as_strided / Tensor.as_strided_ / as_strided_scatter against torch 2.13: values,
memory sharing, storage offsets, gradients (overlapping windows add up) and errors."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(values, requires_grad=False):
    a = np.asarray(values, dtype=np.float64)
    return (sf.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.parametrize("args", [((3, 2), (1, 1)), ((2, 2), (4, 1), 1), ((2, 3), (0, 2)), ((0, 4), (1, 1), 20)])
def test_values_and_geometry_match_torch(args):
    s, t = sf.arange(12.0).reshape(3, 4), torch.arange(12.0).reshape(3, 4)
    out_s, out_t = s.as_strided(*args), t.as_strided(*args)
    np.testing.assert_array_equal(out_s.numpy(), out_t.numpy())
    assert out_s.stride() == out_t.stride() and out_s.storage_offset() == out_t.storage_offset()


def test_offset_defaults_to_the_inputs_own_and_counts_from_the_storage():
    s, t = sf.arange(12.0).reshape(3, 4)[1:], torch.arange(12.0).reshape(3, 4)[1:]
    assert s.storage_offset() == t.storage_offset() == 4
    for args in [((2, 2), (1, 1)), ((2, 2), (1, 1), 0)]:
        np.testing.assert_array_equal(sf.as_strided(s, *args).numpy(), torch.as_strided(t, *args).numpy())


def test_a_view_writes_through_and_shares_the_version():
    z = sf.zeros(5)
    v = z.as_strided((2,), (2,), 1)
    v.fill_(1.0)
    np.testing.assert_array_equal(z.numpy(), [0, 1, 0, 1, 0])
    assert z._version == v._version and z._version != 0


def test_gradient_overlapping_windows_add_like_torch():
    s, t = _pair(np.arange(6.0), requires_grad=True)
    w = np.arange(1.0, 7.0).reshape(3, 2)
    for x, lib in ((s, sf), (t, torch)):
        ((x * 2).as_strided((3, 2), (1, 1)) * lib.tensor(w)).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy())


def test_gradient_of_an_expanded_input_is_shared_like_torch():
    s, t = _pair([0.0, 1.0, 2.0], requires_grad=True)
    for x, lib in ((s, sf), (t, torch)):
        (x.expand(2, 3).as_strided((2,), (1,)) * lib.tensor([1.0, 10.0], dtype=lib.float64)).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy())


def test_second_order_gradient_matches_torch():
    s, t = _pair([0.5, 1.0, 1.5, 2.0], requires_grad=True)
    results = []
    for x, lib in ((s, sf), (t, torch)):
        y = (x ** 3).as_strided((3, 2), (1, 1)).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
        results.append((g.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])


def test_in_place_form_changes_the_view_like_torch():
    s, t = sf.zeros(2, 3).t(), torch.zeros(2, 3).t()
    assert s.as_strided_((3,), (1,)) is s
    t.as_strided_((3,), (1,))
    assert tuple(s.shape) == tuple(t.shape) and s.stride() == t.stride()
    grads = []
    for lib in (sf, torch):
        leaf = lib.arange(4.0, requires_grad=True)
        n = leaf * 1
        n.as_strided_((2,), (2,))
        n.sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        sf.zeros(4, requires_grad=True).as_strided_((2,), (1,))


@pytest.mark.parametrize("args, message", [
    (((2,), (-1,)), r"Negative strides are not supported at the moment, got strides: \[-1\]"),
    (((2, 2), (1, 1), 20), r"setStorage: sizes \[2, 2\], strides \[1, 1\], storage offset 20, and itemsize 4 "
                           r"requiring a storage size of 92 are out of bounds for storage of size 48"),
    (((2,), (1,), -1), "invalid storage offset -1"),
    (((2, 3), (1,)), "mismatch in length of strides and shape"),
])
def test_errors_match_torch(args, message):
    for lib in (sf, torch):
        with pytest.raises(RuntimeError, match=message):
            lib.arange(12.0).reshape(3, 4).as_strided(*args)
    with pytest.raises(TypeError, match="storage_offset"):
        sf.as_strided(sf.zeros(4), (2,), (1,), 1.5)


def test_scatter_values_layout_and_gradient():
    xs, xt = sf.arange(6.0).reshape(2, 3).t(), torch.arange(6.0).reshape(2, 3).t()
    out_s = sf.as_strided_scatter(xs, sf.ones(2) * -1, (2,), (2,), 1)
    out_t = torch.as_strided_scatter(xt, torch.ones(2) * -1, (2,), (2,), 1)
    np.testing.assert_array_equal(out_s.numpy(), out_t.numpy())
    assert out_s.stride() == out_t.stride()
    np.testing.assert_array_equal(xs.numpy(), xt.numpy())  # the input is untouched
    # gradient: torch 2.13's own gradcheck fails on its AsStridedScatterBackward (it returns
    # the window's gradient for `input`), so the reference is torch's finite differences
    a = sf.arange(6.0, dtype=sf.float64, requires_grad=True)
    src = sf.tensor([5.0, 6.0], dtype=sf.float64, requires_grad=True)
    (sf.as_strided_scatter(a * 1, src, (2,), (2,), 1) * sf.arange(6.0, dtype=sf.float64)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0, 0, 2, 0, 4, 5])
    np.testing.assert_array_equal(src.grad.numpy(), [1, 3])


def test_scatter_errors_match_torch():
    for lib in (sf, torch):
        with pytest.raises(RuntimeError, match=r"src size = \[3\], slice size = \[2\]"):
            lib.as_strided_scatter(lib.zeros(4), lib.ones(3), (2,), (1,))


def test_copy_form_is_new_contiguous_memory():
    s = sf.arange(6.0)
    c = sf.as_strided_copy(s, (2, 2), (1, 2))
    np.testing.assert_array_equal(c.numpy(), torch.as_strided_copy(torch.arange(6.0), (2, 2), (1, 2)).numpy())
    assert c.is_contiguous()
    c.fill_(7.0)
    assert float(s.sum()) == 15.0
