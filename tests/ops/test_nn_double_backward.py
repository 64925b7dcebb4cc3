"""Second (and for a few, third) derivatives of the neural-network ops through
``create_graph=True``: each op's ``backward_graph`` against torch 2.13 (gradient and
Hessian-vector product, tests/autograd/_double_backward.py) and, in float64, against finite
differences of shardflow's own first derivative.

Every spec squares (``y * y``) or otherwise makes the op's output non-linear before the sum,
so that the second derivative reaches the op's own ``backward_graph`` and is not zero.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape)


def _sq(y):
    return (y * y).sum()


def _F(m):
    return m.nn.functional


def _sdpa(m, *args, **kwargs):
    """scaled_dot_product_attention; torch's on its math backend (its fused CPU kernel has
    no double backward)."""
    if m is not torch:
        return m.nn.functional.scaled_dot_product_attention(*args, **kwargs)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(*args, **kwargs)


# name -> (f(m, *tensors), arrays)
SPECS = {
    # ------------------------------------------------------------------ conv
    "conv1d_stride_pad_bias": (
        lambda m, x, w, b: _sq(_F(m).conv1d(x, w, b, stride=2, padding=1)),
        [_r(2, 2, 7), _r(3, 2, 3), _r(3)]),
    "conv2d_groups_dilation": (
        lambda m, x, w: _sq(_F(m).conv2d(x, w, padding=2, dilation=2, groups=2)),
        [_r(1, 4, 5, 5), _r(4, 2, 3, 3)]),
    "conv2d_same_even_kernel": (
        lambda m, x, w: _sq(_F(m).conv2d(x, w, padding="same")),
        [_r(1, 2, 4, 4), _r(2, 2, 2, 2)]),
    "conv2d_stride_over_kernel_unbatched": (
        lambda m, x, w, b: _sq(_F(m).conv2d(x, w, b, stride=2)),
        [_r(1, 5, 5), _r(2, 1, 1, 1), _r(2)]),
    "conv3d": (
        lambda m, x, w: _sq(_F(m).conv3d(x, w, padding=1)),
        [_r(1, 1, 3, 3, 3), _r(2, 1, 2, 2, 2)]),
    "conv_transpose2d_stride_outpad_groups": (
        lambda m, x, w, b: _sq(_F(m).conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1,
                                                      groups=2)),
        [_r(1, 2, 3, 3), _r(2, 2, 3, 3), _r(4)]),
    "conv_transpose1d_dilation_outpad": (
        lambda m, x, w: _sq(_F(m).conv_transpose1d(x, w, output_padding=1, dilation=2)),
        [_r(2, 2, 4), _r(2, 3, 3)]),
    # ------------------------------------------------------------------ pool
    "max_pool2d_2x2": (lambda m, x: _sq(_F(m).max_pool2d(x, 2)), [_r(1, 2, 4, 4)]),
    "max_pool2d_k3_s2_p1": (lambda m, x: _sq(_F(m).max_pool2d(x, 3, 2, 1)), [_r(1, 2, 5, 5)]),
    "max_pool1d_dilation_indices": (
        lambda m, x: _sq(_F(m).max_pool1d(x, 2, 1, dilation=2, return_indices=True)[0]), [_r(2, 6)]),
    "avg_pool2d_ceil_no_pad_count": (
        lambda m, x: _sq(_F(m).avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
        [_r(1, 2, 6, 6)]),
    "avg_pool1d": (lambda m, x: _sq(_F(m).avg_pool1d(x, 2)), [_r(1, 2, 6)]),
    "adaptive_avg_pool2d": (lambda m, x: _sq(_F(m).adaptive_avg_pool2d(x, (3, 2))), [_r(1, 2, 5, 5)]),
    "adaptive_avg_pool2d_global": (lambda m, x: _sq(_F(m).adaptive_avg_pool2d(x, 1)), [_r(2, 2, 3, 3)]),
    "adaptive_max_pool2d": (lambda m, x: _sq(_F(m).adaptive_max_pool2d(x, 2)), [_r(1, 2, 5, 5)]),
    # ------------------------------------------------------------------ normalization
    "layer_norm": (lambda m, x, w, b: _sq(_F(m).layer_norm(x, (4,), w, b) * x),
                   [_r(3, 4), _r(4), _r(4)]),
    "layer_norm_2d_shape_no_affine": (lambda m, x: _sq(_F(m).layer_norm(x, (2, 3)) * x), [_r(2, 2, 3)]),
    "group_norm": (lambda m, x, w, b: _sq(_F(m).group_norm(x, 2, w, b) * x),
                   [_r(2, 4, 3), _r(4), _r(4)]),
    "instance_norm": (lambda m, x, w, b: _sq(_F(m).instance_norm(x, weight=w, bias=b) * x),
                      [_r(2, 3, 4), _r(3), _r(3)]),
    "batch_norm_train": (
        lambda m, x, w, b: _sq(_F(m).batch_norm(x, m.zeros(3, dtype=m.float64), m.ones(3, dtype=m.float64),
                                                w, b, training=True) * x),
        [_r(4, 3, 2), _r(3), _r(3)]),
    "batch_norm_eval": (
        lambda m, x, w, b: _sq(_F(m).batch_norm(x, m.full((3,), 0.3, dtype=m.float64),
                                                m.full((3,), 1.7, dtype=m.float64), w, b) * x),
        [_r(4, 3, 2), _r(3), _r(3)]),
    "normalize": (lambda m, x: _sq(_F(m).normalize(x, dim=1) * x), [_r(3, 4)]),
    "normalize_p1": (lambda m, x: _sq(_F(m).normalize(x, p=1.0, dim=0) * x), [_r(3, 4)]),
    "normalize_p3": (lambda m, x: _sq(_F(m).normalize(x, p=3.0, dim=-1) * x), [_r(3, 4)]),
    "rms_norm": (lambda m, x, w: _sq(_F(m).rms_norm(x, (4,), w, eps=1e-6) * x), [_r(3, 4), _r(4)]),
    # ------------------------------------------------------------------ softmax
    "softmax": (lambda m, x: _sq(_F(m).softmax(x, dim=1) * x), [_r(3, 4)]),
    "softmax_dim0": (lambda m, x: _sq(_F(m).softmax(x, dim=0)), [_r(3, 4)]),
    "log_softmax": (lambda m, x: _sq(_F(m).log_softmax(x, dim=-1)), [_r(3, 4)]),
    # ------------------------------------------------------------------ losses
    "cross_entropy": (lambda m, x: _F(m).cross_entropy(x, m.tensor([1, 0, 3])), [_r(3, 4)]),
    "cross_entropy_weight_ignore_smooth": (
        lambda m, x: _F(m).cross_entropy(x, m.tensor([1, -100, 3]), weight=m.tensor([1.0, 2.0, 0.5, 1.5],
                                                                                 dtype=m.float64),
                                         label_smoothing=0.1),
        [_r(3, 4)]),
    "cross_entropy_none_spatial": (
        lambda m, x: _sq(_F(m).cross_entropy(x, m.tensor([[1, 0], [2, 2]]), reduction="none")),
        [_r(2, 3, 2)]),
    "cross_entropy_prob_target": (
        lambda m, x, t: _F(m).cross_entropy(x, t, label_smoothing=0.2) * _F(m).cross_entropy(x, t),
        [_r(3, 4), np.abs(_r(3, 4))]),
    "nll_loss": (lambda m, x: _F(m).nll_loss(_F(m).log_softmax(x, 1), m.tensor([1, 0, 3]),
                                              weight=m.tensor([1.0, 2.0, 0.5, 1.5], dtype=m.float64)),
                 [_r(3, 4)]),
    "mse_loss_broadcast": (lambda m, x, t: _F(m).mse_loss(x * x, t) * _F(m).mse_loss(x, t),
                           [_r(3, 4), _r(1, 4)]),
    "mse_loss_none": (lambda m, x, t: _sq(_F(m).mse_loss(x, t, reduction="none")), [_r(3, 4), _r(3, 4)]),
    "l1_loss": (lambda m, x, t: _F(m).l1_loss(x * x, t) * _F(m).l1_loss(x, t), [_r(3, 4), _r(3, 4)]),
    "smooth_l1_loss": (lambda m, x, t: _sq(_F(m).smooth_l1_loss(x, t, beta=0.7, reduction="none")),
                       [_r(3, 4), _r(3, 4)]),
    "huber_loss": (lambda m, x, t: _sq(_F(m).huber_loss(x, t, delta=0.6, reduction="none")),
                   [_r(3, 4), _r(3, 4)]),
    "binary_cross_entropy": (
        lambda m, x, t: _sq(_F(m).binary_cross_entropy(x, t, reduction="none")),
        [RNG.uniform(0.1, 0.9, (3, 4)), RNG.uniform(0, 1, (3, 4))]),
    "bce_with_logits_weights": (
        lambda m, x, t: _sq(_F(m).binary_cross_entropy_with_logits(
            x, t, weight=m.tensor([0.5, 2.0, 1.0, 1.5], dtype=m.float64),
            pos_weight=m.tensor([1.0, 3.0, 0.5, 2.0], dtype=m.float64), reduction="none")),
        [_r(3, 4), RNG.uniform(0, 1, (3, 4))]),
    "kl_div": (lambda m, x, t: _sq(_F(m).kl_div(x, t, reduction="none")),
               [_r(3, 4), RNG.uniform(0.1, 1, (3, 4))]),
    "kl_div_log_target": (lambda m, x, t: _F(m).kl_div(x, t, reduction="batchmean", log_target=True)
                          * _F(m).kl_div(x * x, t, log_target=True),
                          [_r(3, 4), _r(3, 4)]),
    # ------------------------------------------------------------------ embedding, attention
    "embedding": (lambda m, w: _sq(_F(m).embedding(m.tensor([[0, 2], [2, 3]]), w)),
                  [_r(4, 3)]),
    "embedding_pad_scale": (
        lambda m, w: _sq(_F(m).embedding(m.tensor([[0, 2], [2, 3]]), w, padding_idx=2,
                                         scale_grad_by_freq=True)),
        [_r(4, 3)]),
    "sdpa": (lambda m, q, k, v: _sq(_sdpa(m, q, k, v)),
             [_r(2, 3, 2), _r(2, 4, 2), _r(2, 4, 3)]),
    "sdpa_causal": (lambda m, q, k, v: _sq(_sdpa(m, q, k, v, is_causal=True)),
                    [_r(1, 2, 3, 2), _r(1, 2, 3, 2), _r(1, 2, 3, 2)]),
    "sdpa_float_mask": (lambda m, q, k, v, a: _sq(_sdpa(m, q, k, v, attn_mask=a)),
                        [_r(3, 2), _r(4, 2), _r(4, 2), _r(3, 4)]),
    "sdpa_bool_mask_gqa": (
        lambda m, q, k, v: _sq(_sdpa(m,
            q, k, v, attn_mask=m.tensor([[True, False, True], [False, False, False]]), enable_gqa=True)),
        [_r(1, 4, 2, 2), _r(1, 2, 3, 2), _r(1, 2, 3, 2)]),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_double_backward_matches_torch_and_finite_differences(name):
    f, arrays = SPECS[name]
    check_double_backward(f, [a.copy() for a in arrays])


def test_third_order_of_softmax_and_layer_norm_matches_torch():
    """torch 2.13's own third derivative of ``layer_norm`` is wrong (off by 2e5 here, while
    its ``group_norm`` with one group, the same function, agrees with finite differences of
    its second derivative and with shardflow's): torch runs the layer norm as a composite."""

    def torch_layer_norm(x):
        xc = x - x.mean(1, keepdim=True)
        return xc * ((xc * xc).mean(1, keepdim=True) + 1e-5).rsqrt()

    def third(m, x):
        x = m.tensor(x, requires_grad=True)
        ln = m.nn.functional.layer_norm(x, (4,)) if m is sf else torch_layer_norm(x)
        y = m.nn.functional.softmax(ln, dim=1)
        (g,) = m.autograd.grad((y * y * x).sum(), x, create_graph=True)
        (h,) = m.autograd.grad((g * g).sum(), x, create_graph=True)
        (h * h).sum().backward()
        return x.grad.detach().numpy()

    x = _r(2, 4)
    np.testing.assert_allclose(third(sf, x), third(torch, x), rtol=1e-6, atol=1e-9)


def test_third_order_of_conv_and_pooling_matches_torch():
    def third(m, x, w):
        x = m.tensor(x, requires_grad=True)
        w = m.tensor(w, requires_grad=True)
        y = m.nn.functional.avg_pool2d(m.nn.functional.conv2d(x, w, padding=1), 2)
        y = m.nn.functional.max_pool2d(y * y * y, 1)
        (gx, gw) = m.autograd.grad(y.sum(), (x, w), create_graph=True)
        (h,) = m.autograd.grad((gx * gx).sum() + (gw * gw).sum(), x, create_graph=True)
        (h * h).sum().backward()
        return x.grad.detach().numpy(), w.grad.detach().numpy()

    x, w = _r(1, 2, 4, 4), _r(2, 2, 3, 3)
    for a, b in zip(third(sf, x, w), third(torch, x, w)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fused", [True, False])
def test_dropout_second_derivative_uses_the_forward_mask(fused):
    """dropout's Hessian of sum(dropout(x)**2) is 2 * mask**2 (the mask drawn in forward)."""
    sf.manual_seed(0)
    xa = _r(3, 5) if fused else _r(3, 5, 2)
    x = sf.tensor(xa, requires_grad=True)
    y = (sf.nn.functional.dropout(x, 0.4) if fused else sf.nn.functional.dropout2d(x, 0.4))
    (g,) = sf.autograd.grad((y * y).sum(), x, create_graph=True)
    v = _r(*xa.shape)
    (g * sf.tensor(v)).sum().backward()
    mask = np.where(y.detach().numpy() != 0, 1.0 / 0.6, 0.0)
    np.testing.assert_allclose(g.detach().numpy(), 2 * mask * mask * xa, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2 * mask * mask * v, rtol=1e-12)


def test_sdpa_float_mask_first_order_gradient_matches_torch():
    """Regression: a float mask of the scores' shape got its gradient multiplied by the
    softmax scale (the backward scaled the score gradient in place after the mask's
    gradient aliased it)."""
    q, k, v, a = _r(3, 2), _r(4, 2), _r(4, 2), _r(3, 4)

    def grads(m):
        ts = [m.tensor(x, requires_grad=True) for x in (q, k, v, a)]
        _sq(_sdpa(m, *ts[:3], attn_mask=ts[3])).backward()
        return [t.grad.numpy() for t in ts]

    for got, want in zip(grads(sf), grads(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
