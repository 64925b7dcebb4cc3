"""Regression tests for the differences the nn differential fuzzers (``test_fuzz_nn_*.py``)
found, each against PyTorch on the smallest input that showed it."""

import math

import numpy as np
import pytest
import torch

import shardflow as sf


def _both(fn):
    return fn(torch), fn(sf)


def _close(s, t):
    np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("p", [math.inf, -math.inf])
def test_lp_pool_infinite_norm_is_max_of_abs(p):
    # was (avg_pool(x**inf) * k) ** 0: ones where torch takes max(|x|) over each window
    x = [[0.0, -3.0, 2.0, 0.5]]
    t, s = _both(lambda L: L.nn.functional.lp_pool1d(L.tensor(x), p, 2))
    _close(s, t)
    t, s = _both(lambda L: L.nn.functional.lp_pool2d(L.tensor([x[0], x[0]])[None], p, 2, 1))
    _close(s, t)


def test_max_pool_window_of_minus_inf_reports_first_in_bounds_position():
    # a window with only -inf kept kernel position 0 (in the padding): index and gradient lost
    def run(L):
        x = L.tensor([[[-math.inf, 1.0], [-math.inf, -math.inf]]], requires_grad=True)
        y, i = L.nn.functional.max_pool2d(x, 2, 1, 1, return_indices=True)
        y.sum().backward()
        return i, x.grad
    (ti, tg), (si, sg) = _both(run)
    np.testing.assert_array_equal(si.numpy(), ti.numpy())
    _close(sg, tg)
    t, s = _both(lambda L: repr(L.nn.functional.max_pool2d(  # the node's name read a missing shape
        L.ones(1, 1, 2, 2, requires_grad=True), 2, return_indices=True)[0].grad_fn))
    assert "MaxPool2DWithIndicesBackward0" in s and "MaxPool2DWithIndicesBackward0" in t


def test_avg_pool3d_input_smaller_than_kernel_raises():
    x = np.zeros((1, 1, 1, 1), np.float32)
    with pytest.raises(RuntimeError, match="smaller than kernel size"):
        torch.nn.functional.avg_pool3d(torch.tensor(x), (1, 1, 2), ceil_mode=True)
    with pytest.raises(RuntimeError, match="smaller than kernel size"):
        sf.nn.functional.avg_pool3d(sf.tensor(x), (1, 1, 2), ceil_mode=True)


def test_adaptive_avg_pool_nan_stays_in_its_bin():
    # the pooling-matrix GEMM spread NaN (0 * nan) to every bin of the row
    x = [[[0.0, math.nan, 1.0, math.inf]]]
    for size in [(1, 4), (1, 2), (1, 3)]:
        t, s = _both(lambda L: L.nn.functional.adaptive_avg_pool2d(L.tensor(x), size))
        np.testing.assert_array_equal(s.numpy(), t.numpy())


def test_fractional_max_pool_random_samples_requiring_grad_raises():
    def run(L):
        return L.nn.functional.fractional_max_pool2d(L.zeros(1, 1, 2, 2), 1, output_size=1,
                                                    _random_samples=L.zeros(1, 1, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'random_samples'"):
        run(torch)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'random_samples'"):
        run(sf)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_every_target_ignored_has_zero_gradient(smoothing):
    # 'mean' over no targets: the loss is NaN in both, the gradient was NaN (0 * g/0) and,
    # with label smoothing, float64 for a float32 input
    def run(L, f):
        x = L.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
        f(L, x).sum().backward()
        return x.grad
    for f in [lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([1, 1]), ignore_index=1,
                                                          label_smoothing=smoothing),
              lambda L, x: L.nn.functional.nll_loss(x, L.tensor([1, 1]), ignore_index=1)]:
        t, s = run(torch, f), run(sf, f)
        assert str(s.dtype) == str(t.dtype).replace("torch", "shardflow")
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    f = lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([1, 1]), ignore_index=1, reduction="none",  # noqa: E731
                                                   label_smoothing=0.1)
    assert str(run(sf, f).dtype) == "shardflow.float32" and str(run(torch, f).dtype) == "torch.float32"


@pytest.mark.parametrize("call", [
    lambda L, w: L.nn.functional.binary_cross_entropy(L.rand(3), L.rand(3), weight=w),
    lambda L, w: L.nn.functional.binary_cross_entropy_with_logits(L.rand(3), L.rand(3), weight=w),
    lambda L, w: L.nn.functional.binary_cross_entropy_with_logits(L.rand(3), L.rand(3), pos_weight=w),
    lambda L, w: L.nn.functional.soft_margin_loss(L.rand(3), w),
    lambda L, w: L.nn.functional.multi_margin_loss(L.rand(2, 3), L.tensor([0, 2]), weight=w),
    lambda L, w: L.nn.functional.cross_entropy(L.rand(2, 3), L.tensor([0, 2]), weight=w),
    lambda L, w: L.nn.functional.nll_loss(L.rand(2, 3, 1), L.tensor([[0], [2]]), weight=w),
])
def test_loss_weight_requiring_grad_raises_like_torch(call):
    # torch has no gradient for these arguments and refuses; shardflow silently gave none
    def run(L):
        with pytest.raises(RuntimeError, match="is not differentiable with respect to argument") as e:
            call(L, L.rand(3, requires_grad=True))
        with L.no_grad():
            call(L, L.rand(3, requires_grad=True))  # no refusal with grad mode off
        return str(e.value)
    assert run(sf) == run(torch)


def test_cosine_embedding_loss_uses_torch_formula():
    # a zero vector's gradient was 100x torch's (cosine_similarity's 1e-8 norm clamp), and a
    # target other than +-1 took the -1 branch where torch gives 0
    def run(L):
        a = L.tensor([[0.5, 1.0], [1.0, 2.0], [3.0, 1.0]], requires_grad=True)
        b = L.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, -1.0]], requires_grad=True)
        y = L.nn.functional.cosine_embedding_loss(a, b, L.tensor([-1.0, 1.0, 0.0]), margin=-0.5, reduction="none")
        y.sum().backward()
        return y, b.grad
    (ty, tg), (sy, sg) = run(torch), run(sf)
    _close(sy, ty)
    np.testing.assert_allclose(sg.numpy(), tg.numpy(), rtol=1e-5)


def test_multilabel_margin_loss_counts_repeated_targets():
    t, s = _both(lambda L: L.nn.functional.multilabel_margin_loss(
        L.tensor([[0.0, 0.0, 1.0]]), L.tensor([[0, 0, -1]]), reduction="none"))
    _close(s, t)


def test_group_norm_one_value_per_group_raises():
    for L in (torch, sf):
        with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
            L.nn.functional.group_norm(L.zeros(1, 2), 2)
        L.nn.functional.group_norm(L.zeros(1, 2), 1)  # two values in the group: fine


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_no_indices(mode):
    # every bag empty: reading the (empty) index array at slot 0 raised IndexError
    t, s = _both(lambda L: L.nn.functional.embedding_bag(L.tensor([], dtype=L.int64), L.ones(3, 2),
                                                         L.tensor([0, 0]), mode=mode))
    _close(s, t)


def test_instance_norm_one_spatial_element_raises():
    for L in (torch, sf):
        with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
            L.nn.functional.instance_norm(L.zeros(1, 1, 1))
        L.nn.functional.instance_norm(L.zeros(1, 1, 1), L.zeros(1), L.ones(1), use_input_stats=False)


def test_embedding_bag_of_no_indices_with_per_sample_weights():
    t, s = _both(lambda L: L.nn.functional.embedding_bag(
        L.tensor([], dtype=L.int64), L.ones(3, 2), L.tensor([0]), mode="sum", per_sample_weights=L.tensor([])))
    _close(s, t)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_probability_target_differentiates_weight(reduction):
    # the weight was a constant with class-probability targets: weight.grad stayed None
    def run(L):
        x = L.linspace(-1, 1, 12).reshape(2, 3, 2).requires_grad_()
        w = L.tensor([0.5, 1.0, 2.0], requires_grad=True)
        p = L.linspace(0, 1, 12).reshape(2, 3, 2)
        y = L.nn.functional.cross_entropy(x, p, weight=w, reduction=reduction, label_smoothing=0.2)
        return (y,) + L.autograd.grad(y.sum(), [x, w])
    for s, t in zip(run(sf), run(torch)):
        np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_margin_losses_have_no_gradient_at_the_hinge():
    # clamp(z, 0) passed the gradient at z == 0; torch's kernels add a term only for z > 0
    def run(L):
        x = L.tensor([[0.0, -1.0]], requires_grad=True)
        x2 = L.tensor([[0.0, -0.5]], requires_grad=True)
        y = L.nn.functional.multilabel_margin_loss(x, L.tensor([[0, -1]]), reduction="sum")
        y2 = L.nn.functional.multi_margin_loss(x2, L.tensor([0]), margin=0.5)
        return L.autograd.grad(y, [x])[0], L.autograd.grad(y2, [x2])[0]
    for s, t in zip(run(sf), run(torch)):
        np.testing.assert_array_equal(s.numpy(), t.numpy())


def test_embedding_max_norm_with_no_indices():
    # renormalising no rows reshaped an empty selection to (0, -1) and raised ValueError
    t, s = _both(lambda L: L.nn.functional.embedding(L.tensor([], dtype=L.int64), L.full((2, 3), 4.0), max_norm=1.0))
    assert tuple(s.shape) == tuple(t.shape) == (0, 3)


@pytest.mark.parametrize("call", [
    # a bias of the wrong length was broadcast silently
    lambda L: L.nn.functional.conv2d(L.zeros(1, 1, 4, 4), L.zeros(2, 1, 3, 3), L.zeros(3)),
    lambda L: L.nn.functional.conv_transpose1d(L.zeros(1, 1, 4), L.zeros(1, 2, 3), L.zeros(1)),
    # ZeroDivisionError before
    lambda L: L.nn.functional.conv2d(L.zeros(1, 1, 4, 4), L.zeros(1, 1, 3, 3), stride=0),
    lambda L: L.nn.functional.avg_pool2d(L.zeros(1, 1, 4, 4), 2, stride=0),
    lambda L: L.nn.functional.max_pool1d(L.zeros(1, 1, 4), 2, stride=0),
    # ValueError before
    lambda L: L.nn.functional.conv_transpose2d(L.zeros(1, 1, 2, 2), L.zeros(1, 1, 3, 3), output_padding=1),
    lambda L: L.nn.functional.group_norm(L.zeros(2, 3), 2),
    lambda L: L.nn.functional.huber_loss(L.zeros(2), L.zeros(2), delta=-1.0),
    lambda L: L.nn.functional.smooth_l1_loss(L.zeros(2), L.zeros(2), beta=-1.0),
])
def test_bad_arguments_raise_runtime_error_like_torch(call):
    for L in (torch, sf):
        with pytest.raises(RuntimeError):
            call(L)
