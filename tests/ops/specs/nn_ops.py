"""Specs for the nn ops (softmax family, losses, normalization, attention): forward and
backward vs torch.nn.functional, and float64 finite differences."""

from shardflow.testing.opspec import Arg, OpSpec


def _F(m):
    """torch.nn.functional for torch; the shardflow top-level namespace for shardflow."""
    return m.nn.functional if m.__name__ == "torch" else m


def _idx(shape, C):
    return Arg(shape, kind="index", high=C, grad=False)


def _w(C):
    return Arg((C,), kind="positive", grad=False)


def _prob(shape):
    return Arg(shape, kind="uniform", low=0.05, high=0.95)


def _ce_ignore(m, x):
    t = m.tensor([-100, 1, 3, -100, 0])
    return _F(m).cross_entropy(x, t)


SPECS = [
    # ---------------------------------------------------------------- softmax family
    OpSpec("softmax_last", lambda m, x: _F(m).softmax(x, dim=-1), [Arg((3, 5))]),
    OpSpec("softmax_dim1_3d", lambda m, x: _F(m).softmax(x, dim=1), [Arg((2, 4, 3))]),
    OpSpec("softmax_method", lambda m, x: x.softmax(0), [Arg((4, 3))]),
    OpSpec("softmax_dtype64", lambda m, x: m.softmax(x, -1, dtype=m.float64), [Arg((2, 3))]),
    OpSpec("log_softmax_last", lambda m, x: _F(m).log_softmax(x, dim=-1), [Arg((3, 5))]),
    OpSpec("log_softmax_dim0", lambda m, x: _F(m).log_softmax(x, 0), [Arg((4, 2, 3))]),
    OpSpec("log_softmax_method", lambda m, x: x.log_softmax(dim=1), [Arg((2, 6))]),
    OpSpec("log_softmax_large", lambda m, x: _F(m).log_softmax(x * 100.0, -1), [Arg((3, 4))], fd_atol=1e-4),
    # ---------------------------------------------------------------- cross entropy / nll
    OpSpec("cross_entropy_2d", lambda m, x, t: _F(m).cross_entropy(x, t), [Arg((5, 4)), _idx((5,), 4)]),
    OpSpec("cross_entropy_sum", lambda m, x, t: _F(m).cross_entropy(x, t, reduction="sum"),
           [Arg((5, 4)), _idx((5,), 4)]),
    OpSpec("cross_entropy_none", lambda m, x, t: _F(m).cross_entropy(x, t, reduction="none"),
           [Arg((5, 4)), _idx((5,), 4)]),
    OpSpec("cross_entropy_spatial", lambda m, x, t: _F(m).cross_entropy(x, t),
           [Arg((2, 4, 3, 2)), _idx((2, 3, 2), 4)]),
    OpSpec("cross_entropy_spatial_none", lambda m, x, t: _F(m).cross_entropy(x, t, reduction="none"),
           [Arg((2, 3, 4)), _idx((2, 4), 3)]),
    OpSpec("cross_entropy_unbatched", lambda m, x, t: _F(m).cross_entropy(x, t), [Arg((6,)), _idx((), 6)]),
    OpSpec("cross_entropy_weight", lambda m, x, t, w: _F(m).cross_entropy(x, t, weight=w),
           [Arg((6, 4)), _idx((6,), 4), _w(4)]),
    OpSpec("cross_entropy_ignore", _ce_ignore, [Arg((5, 4))]),
    OpSpec("cross_entropy_smooth", lambda m, x, t: _F(m).cross_entropy(x, t, label_smoothing=0.2),
           [Arg((5, 4)), _idx((5,), 4)]),
    OpSpec("cross_entropy_smooth_weight_ignore",
           lambda m, x, t, w: _F(m).cross_entropy(x, t, weight=w, ignore_index=1, label_smoothing=0.1),
           [Arg((7, 3, 2)), _idx((7, 2), 3), _w(3)]),
    OpSpec("cross_entropy_smooth_none_spatial",
           lambda m, x, t, w: _F(m).cross_entropy(x, t, weight=w, reduction="none", label_smoothing=0.3),
           [Arg((3, 4, 2)), _idx((3, 2), 4), _w(4)]),
    OpSpec("cross_entropy_prob", lambda m, x, t: _F(m).cross_entropy(x, t), [Arg((4, 5)), _prob((4, 5))]),
    OpSpec("cross_entropy_prob_weight_smooth",
           lambda m, x, t, w: _F(m).cross_entropy(x, t, weight=w, label_smoothing=0.1, reduction="sum"),
           [Arg((3, 4, 2)), _prob((3, 4, 2)), _w(4)]),
    OpSpec("cross_entropy_prob_none", lambda m, x, t: _F(m).cross_entropy(x, t, reduction="none"),
           [Arg((3, 4)), _prob((3, 4))]),
    OpSpec("nll_loss", lambda m, x, t: _F(m).nll_loss(x, t), [Arg((5, 4)), _idx((5,), 4)]),
    OpSpec("nll_loss_weight_none", lambda m, x, t, w: _F(m).nll_loss(x, t, weight=w, reduction="none"),
           [Arg((5, 4)), _idx((5,), 4), _w(4)]),
    OpSpec("nll_loss_weight_ignore", lambda m, x, t, w: _F(m).nll_loss(x, t, weight=w, ignore_index=2),
           [Arg((2, 3, 4)), _idx((2, 4), 3), _w(3)]),
    OpSpec("nll_loss_sum_unbatched", lambda m, x, t: _F(m).nll_loss(x, t, reduction="sum"),
           [Arg((5,)), _idx((), 5)]),
    # ---------------------------------------------------------------- pointwise losses
    OpSpec("mse_loss", lambda m, x, t: _F(m).mse_loss(x, t), [Arg((3, 4)), Arg((3, 4))]),
    OpSpec("mse_loss_sum", lambda m, x, t: _F(m).mse_loss(x, t, reduction="sum"), [Arg((3, 4)), Arg((3, 4))]),
    OpSpec("mse_loss_none", lambda m, x, t: _F(m).mse_loss(x, t, reduction="none"), [Arg((3, 4)), Arg((3, 4))]),
    OpSpec("mse_loss_weight", lambda m, x, t, w: _F(m).mse_loss(x, t, weight=w),
           [Arg((3, 4)), Arg((3, 4)), Arg((3, 4), kind="positive", grad=False)]),
    OpSpec("l1_loss", lambda m, x, t: _F(m).l1_loss(x, t), [Arg((3, 4)), Arg((3, 4))]),
    OpSpec("l1_loss_none", lambda m, x, t: _F(m).l1_loss(x, t, reduction="none"), [Arg((5,)), Arg((5,))]),
    OpSpec("smooth_l1_loss", lambda m, x, t: _F(m).smooth_l1_loss(x, t), [Arg((4, 5)), Arg((4, 5))]),
    OpSpec("smooth_l1_loss_beta", lambda m, x, t: _F(m).smooth_l1_loss(x, t, beta=0.5, reduction="sum"),
           [Arg((4, 5)), Arg((4, 5))]),
    OpSpec("huber_loss", lambda m, x, t: _F(m).huber_loss(x, t, delta=0.7), [Arg((4, 5)), Arg((4, 5))]),
    OpSpec("huber_loss_none", lambda m, x, t: _F(m).huber_loss(x, t, reduction="none"),
           [Arg((6,)), Arg((6,))]),
    OpSpec("binary_cross_entropy", lambda m, x, t: _F(m).binary_cross_entropy(x, t),
           [_prob((3, 4)), _prob((3, 4))]),
    OpSpec("binary_cross_entropy_weight_none",
           lambda m, x, t, w: _F(m).binary_cross_entropy(x, t, weight=w, reduction="none"),
           [_prob((3, 4)), Arg((3, 4), kind="uniform", low=0.0, high=1.0, grad=False), _w(4)]),
    OpSpec("bce_with_logits", lambda m, x, t: _F(m).binary_cross_entropy_with_logits(x, t),
           [Arg((3, 4)), _prob((3, 4))]),
    OpSpec("bce_with_logits_large", lambda m, x, t: _F(m).binary_cross_entropy_with_logits(x * 50.0, t),
           [Arg((3, 4)), _prob((3, 4))], fd_atol=1e-4),
    OpSpec("bce_with_logits_weights",
           lambda m, x, t, w, pw: _F(m).binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw,
                                                                       reduction="sum"),
           [Arg((3, 4)), _prob((3, 4)), Arg((3, 1), kind="positive", grad=False), _w(4)]),
    OpSpec("bce_with_logits_none_pw",
           lambda m, x, t, pw: _F(m).binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction="none"),
           [Arg((2, 3, 4)), _prob((2, 3, 4)), _w(4)]),
    OpSpec("kl_div_batchmean", lambda m, x, t: _F(m).kl_div(x, t, reduction="batchmean"),
           [Arg((3, 4)), _prob((3, 4))]),
    OpSpec("kl_div_log_target", lambda m, x, t: _F(m).kl_div(x, t, reduction="sum", log_target=True),
           [Arg((3, 4)), Arg((3, 4))]),
    OpSpec("kl_div_none", lambda m, x, t: _F(m).kl_div(x, t, reduction="none"), [Arg((3, 4)), _prob((3, 4))]),
]


def _bn_train(m, x, w, b):
    C = x.shape[1]
    return _F(m).batch_norm(x, m.zeros(C, dtype=x.dtype), m.ones(C, dtype=x.dtype), w, b, training=True,
                            momentum=0.2)


SPECS += [
    # ---------------------------------------------------------------- normalization
    OpSpec("layer_norm", lambda m, x, w, b: _F(m).layer_norm(x, (5,), w, b), [Arg((2, 3, 5)), Arg((5,)), Arg((5,))]),
    OpSpec("layer_norm_2d_shape", lambda m, x, w, b: _F(m).layer_norm(x, (3, 4), w, b, eps=1e-3),
           [Arg((2, 3, 4)), Arg((3, 4)), Arg((3, 4))]),
    OpSpec("layer_norm_no_affine", lambda m, x: _F(m).layer_norm(x, [6]), [Arg((4, 6))]),
    OpSpec("layer_norm_weight_only", lambda m, x, w: _F(m).layer_norm(x, (4,), w), [Arg((3, 4)), Arg((4,))]),
    OpSpec("batch_norm_train", _bn_train, [Arg((4, 3, 2, 2)), Arg((3,)), Arg((3,))]),
    OpSpec("batch_norm_train_2d", lambda m, x: _F(m).batch_norm(x, None, None, training=True), [Arg((5, 3))]),
    OpSpec("batch_norm_eval",
           lambda m, x, rm, rv, w, b: _F(m).batch_norm(x, rm, rv, w, b, training=False),
           [Arg((3, 4, 2)), Arg((4,), grad=False), Arg((4,), kind="positive", grad=False), Arg((4,)), Arg((4,))]),
    OpSpec("group_norm", lambda m, x, w, b: _F(m).group_norm(x, 2, w, b), [Arg((2, 4, 3)), Arg((4,)), Arg((4,))]),
    OpSpec("group_norm_4d_no_affine", lambda m, x: _F(m).group_norm(x, 3, eps=1e-3), [Arg((2, 6, 2, 2))]),
    OpSpec("instance_norm", lambda m, x, w, b: _F(m).instance_norm(x, weight=w, bias=b),
           [Arg((2, 3, 5)), Arg((3,)), Arg((3,))]),
    OpSpec("rms_norm", lambda m, x, w: _F(m).rms_norm(x, (5,), w, eps=1e-6), [Arg((2, 3, 5)), Arg((5,))]),
    OpSpec("rms_norm_default_eps", lambda m, x: _F(m).rms_norm(x, [2, 3]), [Arg((4, 2, 3))]),
    OpSpec("normalize", lambda m, x: _F(m).normalize(x), [Arg((3, 4))]),
    OpSpec("normalize_p1_dim", lambda m, x: _F(m).normalize(x, p=1.0, dim=-1), [Arg((2, 3, 4))]),
    OpSpec("normalize_p3", lambda m, x: _F(m).normalize(x, p=3.0, dim=0), [Arg((4, 3))]),
]


def _sdpa(**kw):
    return lambda m, q, k, v: _F(m).scaled_dot_product_attention(q, k, v, **kw)


def _sdpa_mask(**kw):
    return lambda m, q, k, v, mask: _F(m).scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)


_QKV = [Arg((2, 2, 3, 4)), Arg((2, 2, 5, 4)), Arg((2, 2, 5, 3))]

SPECS += [
    # ---------------------------------------------------------------- attention
    OpSpec("sdpa", _sdpa(), _QKV),
    OpSpec("sdpa_3d", _sdpa(), [Arg((2, 3, 4)), Arg((2, 4, 4)), Arg((2, 4, 2))]),
    OpSpec("sdpa_causal", _sdpa(is_causal=True), [Arg((2, 2, 4, 3)), Arg((2, 2, 4, 3)), Arg((2, 2, 4, 3))]),
    OpSpec("sdpa_causal_rect", _sdpa(is_causal=True, scale=0.3), _QKV),
    # causal row blocks (ops/attention.py): odd L, more queries than keys, one query
    OpSpec("sdpa_causal_odd_tall", _sdpa(is_causal=True),
           [Arg((1, 3, 7, 4)), Arg((1, 3, 5, 4)), Arg((1, 3, 5, 2))]),
    OpSpec("sdpa_causal_one_query", _sdpa(is_causal=True),
           [Arg((2, 1, 4)), Arg((2, 6, 4)), Arg((2, 6, 3))]),
    OpSpec("sdpa_bool_mask", _sdpa_mask(), _QKV + [Arg((3, 5), kind="bool", grad=False)]),
    OpSpec("sdpa_float_mask", _sdpa_mask(), _QKV + [Arg((2, 1, 3, 5))]),
    OpSpec("sdpa_gqa", _sdpa(enable_gqa=True), [Arg((1, 4, 3, 4)), Arg((1, 2, 5, 4)), Arg((1, 2, 5, 4))]),
    OpSpec("sdpa_broadcast_kv", _sdpa(), [Arg((2, 3, 3, 4)), Arg((1, 5, 4)), Arg((1, 5, 2))]),
    # ---------------------------------------------------------------- ctc loss (through log_softmax:
    # torch's ctc gradient is the true one only there, see shardflow/ops/ctc.py)
    OpSpec("ctc_loss_mean", lambda m, x: m.nn.functional.ctc_loss(x.log_softmax(2), m.tensor([[1, 2, 2], [3, 1, 0]]),
                                                        m.tensor([6, 5]), m.tensor([3, 2])),
           [Arg((6, 2, 4))], dtypes=("float32", "float64"), notes="torch has no bfloat16 ctc_loss on CPU"),
    OpSpec("ctc_loss_none_concatenated", lambda m, x: m.nn.functional.ctc_loss(
        x.log_softmax(-1), m.tensor([1, 1, 2, 3]), m.tensor([5, 3, 4]), m.tensor([2, 2, 0]), reduction="none"),
        [Arg((5, 3, 4))], dtypes=("float32", "float64"), notes="torch has no bfloat16 ctc_loss on CPU"),
    OpSpec("ctc_loss_sum_blank_last_zero_inf", lambda m, x: m.nn.functional.ctc_loss(
        x.log_softmax(2), m.tensor([[0, 1, 1], [2, 0, 1]]), m.tensor([6, 2]), m.tensor([3, 3]), blank=3,
        reduction="sum", zero_infinity=True),
        [Arg((6, 2, 4))], dtypes=("float32", "float64"), notes="torch has no bfloat16 ctc_loss on CPU"),
    # ---------------------------------------------------------------- compositions in nn.functional
    OpSpec("triplet_margin_loss", lambda m, a, p, n: m.nn.functional.triplet_margin_loss(a, p, n, margin=2.0),
           [Arg((5, 4)), Arg((5, 4)), Arg((5, 4))]),
    OpSpec("triplet_margin_loss_swap_l1", lambda m, a, p, n: m.nn.functional.triplet_margin_loss(
        a, p, n, margin=3.0, p=1, swap=True, reduction="none"), [Arg((4, 3)), Arg((4, 3)), Arg((4, 3))]),
    OpSpec("pixel_shuffle", lambda m, x: m.nn.functional.pixel_shuffle(x, 2), [Arg((2, 8, 2, 3))]),
    OpSpec("pixel_unshuffle_batched_dims", lambda m, x: m.nn.functional.pixel_unshuffle(x, 2), [Arg((2, 1, 3, 4, 2))]),
]
