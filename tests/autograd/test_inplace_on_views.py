"""In-place ops on views while the graph is recorded (``autograd/view_inplace.py``):
``y[0].add_(1)`` must change ``y`` and its gradient, as PyTorch's ``CopySlices`` does. Before
session 29 only the view was rebased: ``y`` kept its old values and gradient, silently."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4) / 4


def _run(lib, program):
    x = lib.tensor(X, requires_grad=True)
    w = lib.tensor(X[0] + 1.0, requires_grad=True)
    out = program(lib, x, w)
    (out * lib.tensor(np.arange(out.numel(), dtype=np.float32).reshape(tuple(out.shape)))).sum().backward()
    return out.detach().numpy(), x.grad.numpy(), None if w.grad is None else w.grad.numpy()


PROGRAMS = {
    "row_add_": lambda L, x, w: (lambda y: (y[0].add_(1), y)[1])(x * 2),
    "row_mul_tensor": lambda L, x, w: (lambda y: (y[1].mul_(w), y)[1])(x * 2),
    "view_mul_": lambda L, x, w: (lambda y: (y.view(-1)[2:7].mul_(3), y)[1])(x + 0),
    "column_copy_": lambda L, x, w: (lambda y: (y[:, 2].copy_(w[:3] * 5), y)[1])(x * 1),
    "transpose_row_sub_": lambda L, x, w: (lambda y: (y.t()[1].sub_(w[:3]), y)[1])(x.sin()),
    "narrow_clamp_": lambda L, x, w: (lambda y: (y.narrow(1, 1, 2).clamp_(max=1.5), y)[1])(x * 1),
    "diagonal_fill_": lambda L, x, w: (lambda y: (y.diagonal().fill_(9), y)[1])(x * 3),
    "diagonal_add_": lambda L, x, w: (lambda y: (y.diagonal(1).add_(w[:3]), y)[1])(x * 3),
    "negative_step_view": lambda L, x, w: (lambda y: (y.flip(0)[0].mul_(2) if False else y[:, 1:4:2].mul_(w[:2]), y)[1])(x * 1),
    "view_of_view": lambda L, x, w: (lambda y: (y[1:][:, 1:3].t()[0].add_(w[:2]), y)[1])(x * 2),
    "buffer_row_from_param": lambda L, x, w: (lambda b: (b[1].copy_(w), b * x)[1])(L.zeros(3, 4)),
    "narrow_then_inplace": lambda L, x, w: (lambda y: (y.narrow(1, 2, 2).mul_(w[:2]), y)[1])(x * 1),
    "unsqueeze_view": lambda L, x, w: (lambda y: (y.unsqueeze(0)[0, 2].zero_(), y)[1])(x * 1),
    "select_then_setitem": lambda L, x, w: (lambda y: (y[2].__setitem__(slice(0, 2), w[:2]), y)[1])(x * 1),
    "then_used_again": lambda L, x, w: (lambda y: (y[0].mul_(w), y.sum(1, keepdim=True) * y)[1])(x * 1),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inplace_on_a_view_changes_the_base_and_its_gradient_as_torch(name):
    (ty, tx, tw), (sy, sx, sw) = (_run(lib, PROGRAMS[name]) for lib in (torch, sf))
    np.testing.assert_allclose(sy, ty, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sx, tx, rtol=1e-6, atol=1e-6)
    assert (sw is None) == (tw is None)
    if tw is not None:
        np.testing.assert_allclose(sw, tw, rtol=1e-6, atol=1e-6)


def test_the_view_keeps_aliasing_its_base_after_the_op():
    y = sf.tensor(X, requires_grad=True) * 1
    v = y[1]
    v.add_(1)
    v.mul_(2)  # a second op on the same view: still the base's memory
    np.testing.assert_array_equal(y.detach().numpy()[1], (X[1] * 1 + 1) * 2)
    assert y.grad_fn.name() == "CopySlices" and v._base is y


def test_view_of_a_leaf_that_requires_grad_refuses_as_torch():
    for lib in (torch, sf):
        w = lib.ones(3, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
            w[0].add_(1)
        with lib.no_grad():
            w[0].add_(1)  # allowed under no_grad, and the base sees it
        assert w.sum().item() == 16.0


def test_writing_through_an_expanded_view_is_refused():
    for lib in (torch, sf):
        y = lib.ones(1, 3, requires_grad=True) * 2
        e = y.expand(4, 3)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            e.add_(lib.ones(4, 3, requires_grad=True))


def test_diagonal_is_writable_without_grad():
    for lib in (torch, sf):
        c = lib.zeros(3, 3)
        c.diagonal().add_(0.5)
        c.diagonal(1).fill_(2)
        assert c.numpy().tolist() == [[0.5, 2, 0], [0, 0.5, 2], [0, 0, 0.5]]


def test_fill_and_zero_keep_the_tensor_in_the_graph_as_torch():
    for lib in (torch, sf):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.fill_(5)
        assert y.requires_grad and y.grad_fn.name() == "FillBackward2"
        z = x * 3
        z.zero_()
        assert z.grad_fn.name() == "ZeroBackward0"
        (y * z + y).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0]  # a zero gradient, not None


def test_setitem_nodes_are_named_as_torch():
    for lib in (torch, sf):
        y = lib.ones(3, 4, requires_grad=True) * 1
        y[:, 1] = 0
        assert "grad_fn=<CopySlices>" in repr(y)  # (torch's name() adds "torch::autograd::")
        y[lib.tensor([0, 2])] = 5.0
        assert y.grad_fn.name() == "IndexPutBackward0"


def test_writing_an_expanded_view_without_grad_raises_torch_s_runtime_error():
    for lib in (torch, sf):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            lib.zeros(3, 1).expand(3, 4).add_(1)


def test_overlap_check_from_strides_agrees_with_the_element_offsets():
    """``may_overlap`` (the strides test that spares ``np.unique`` over every written
    position: 18 ms a call for d2l's ``masked_softmax``) is never False for a view whose
    elements share memory, and is False for the usual views (slices, transposes, reshapes,
    diagonals, negative steps)."""
    from shardflow.autograd.view_inplace import _offsets, may_overlap

    a = np.zeros((4, 5, 6), np.float32)
    views = [a, a[1], a[:, 2], a[..., ::2], a[::-1, :, 1:4], a.transpose(2, 0, 1), a.reshape(20, 6)[3:9],
             np.diagonal(a, axis1=1, axis2=2), a[:, :1, :], a[:0],
             np.broadcast_to(a[:, :1], (4, 3, 6)), np.lib.stride_tricks.as_strided(a, (5, 4), (4, 4)),
             np.lib.stride_tricks.as_strided(a, (3, 3), (8, 12)), np.lib.stride_tricks.as_strided(a, (3, 4), (12, 4)),
             np.lib.stride_tricks.as_strided(a, (2, 3), (12, 8))]  # interleaved: no overlap, not proven
    verdicts = []
    for v in views:
        offsets = _offsets(v).reshape(-1)
        overlapping = np.unique(offsets).size != offsets.size
        verdicts.append(may_overlap(v))
        assert may_overlap(v) or not overlapping, (v.shape, v.strides)
    assert verdicts == [False] * 10 + [True] * 5


def test_masked_write_through_a_reshaped_view_as_torch():
    """d2l's ``sequence_mask(X.reshape(-1, n), valid_lens, value=-1e6)`` inside
    ``masked_softmax``: a boolean-mask write through a reshape of a non-leaf; the values and
    the gradient are torch's."""
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((2, 3, 4)).astype(np.float32)
    results = []
    for lib in (torch, sf):
        s = lib.tensor(scores, requires_grad=True)
        X = (s * 2).reshape(-1, 4)
        mask = lib.arange(4, dtype=lib.float32)[None, :] < lib.tensor([1, 2, 3, 4, 2, 1])[:, None]
        X[~mask] = -1e6
        out = lib.nn.functional.softmax(X.reshape(2, 3, 4), dim=-1)
        (out * lib.arange(24.0).reshape(2, 3, 4)).sum().backward()
        results.append((out.detach().numpy(), s.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)
