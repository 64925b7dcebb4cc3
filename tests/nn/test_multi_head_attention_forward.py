"""``F.multi_head_attention_forward`` called directly, as openai/CLIP's ``AttentionPool2d``
does: separate q/k/v projection weights (``use_separate_proj_weight=True``, one packed
``in_proj_bias``) and an output projection that changes the width (``c_proj``: embed_dim ->
output_dim). shardflow reshaped the projected output to ``(L, N, embed_dim)`` and raised
``RuntimeError: shape '[2, 4, 256]' is invalid``; torch's shape is ``(L, N, out_dim)``.
"""

import warnings

import numpy as np
import torch

import shardflow


def _call(lib, tensors, training, need_weights):
    x, qw, kw, vw, b, ow, ob = (lib.tensor(t, requires_grad=True) for t in tensors)
    out, w = lib.nn.functional.multi_head_attention_forward(
        query=x, key=x, value=x, embed_dim_to_check=x.shape[-1], num_heads=4,
        q_proj_weight=qw, k_proj_weight=kw, v_proj_weight=vw, in_proj_weight=None,
        in_proj_bias=b, bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0,
        out_proj_weight=ow, out_proj_bias=ob, use_separate_proj_weight=True,
        training=training, need_weights=need_weights)
    out.square().sum().backward()
    return out, w, x.grad, qw.grad, ow.grad


def test_separate_weights_and_narrower_out_proj_like_torch():
    rng = np.random.default_rng(0)
    e, o = 16, 6  # embed_dim, output_dim
    tensors = [rng.standard_normal(s).astype(np.float32) * 0.3
               for s in ((5, 3, e), (e, e), (e, e), (e, e), (3 * e,), (o, e), (o,))]
    for training, need_weights in ((True, False), (False, True)):
        th = _call(torch, tensors, training, need_weights)
        sf = _call(shardflow, tensors, training, need_weights)
        assert tuple(sf[0].shape) == tuple(th[0].shape) == (5, 3, o)
        assert (sf[1] is None) == (th[1] is None)
        for a, b in zip(sf, th):
            if b is not None:
                np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_unbatched_narrower_out_proj_like_torch():
    rng = np.random.default_rng(1)
    e, o = 8, 12  # a wider output projection too
    tensors = [rng.standard_normal(s).astype(np.float32) * 0.3
               for s in ((4, e), (e, e), (e, e), (e, e), (3 * e,), (o, e), (o,))]
    th = _call(torch, tensors, False, True)
    sf = _call(shardflow, tensors, False, True)
    assert tuple(sf[0].shape) == tuple(th[0].shape) == (4, o)
    np.testing.assert_allclose(sf[0].detach().numpy(), th[0].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sf[1].detach().numpy(), th[1].detach().numpy(), rtol=1e-5, atol=1e-6)


def _mha_outputs(lib, dtype, need_weights):
    lib.manual_seed(0)
    m = lib.nn.MultiheadAttention(16, 4, dropout=0.3).to(getattr(lib, dtype))
    x = lib.randn(5, 3, 16).to(getattr(lib, dtype))
    mask = lib.full((5, 5), float("-inf")).triu(1).to(getattr(lib, dtype))
    kpm = lib.tensor([[0.0] * 5, [0.0] * 4 + [float("-inf")], [0.0] * 3 + [float("-inf")] * 2]).to(getattr(lib, dtype))
    train = m(x, x, x, need_weights=need_weights, attn_mask=mask)[0]  # dropout from the seed
    m.eval()
    evaluated = m(x, x, x, need_weights=need_weights, attn_mask=mask, key_padding_mask=kpm)[0]
    return train.detach().float().numpy(), evaluated.detach().float().numpy()


def test_need_weights_false_is_sdpa_like_torch():
    """Without weights torch computes the attention with ``scaled_dot_product_attention``
    (``nn.TransformerEncoderLayer`` and CLIP's blocks call it so): in float16/bfloat16 the
    outputs are torch's bits, with dropout in training (the same draws from the same seed)
    and with a causal mask merged with a key padding mask in eval. shardflow computed
    ``softmax(q k^T) v`` itself: 96 of 128 of CLIP's float16 text features were off."""
    for dtype in ("float16", "bfloat16"):
        for th, sf in zip(_mha_outputs(torch, dtype, False), _mha_outputs(shardflow, dtype, False)):
            np.testing.assert_array_equal(sf, th, err_msg=dtype)
    for th, sf in zip(_mha_outputs(torch, "float32", False), _mha_outputs(shardflow, "float32", False)):
        np.testing.assert_allclose(sf, th, rtol=1e-5, atol=1e-6)


def _mismatch_warnings(lib, kpm_dtype):
    lib.manual_seed(0)
    m = lib.nn.MultiheadAttention(8, 2)
    x = lib.randn(4, 2, 8)
    mask = lib.full((4, 4), float("-inf")).triu(1)
    kpm = lib.tensor([[False] * 4, [False] * 3 + [True]])
    if kpm_dtype == "float":
        kpm = lib.zeros(2, 4).masked_fill(kpm, float("-inf"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = m(x, x, x, attn_mask=mask, key_padding_mask=kpm)[0]
    return [str(w.message) for w in caught if "mismatched" in str(w.message)], out.detach().numpy()


def test_mismatched_padding_and_attention_masks_warn_like_torch():
    """A bool ``key_padding_mask`` beside a float ``attn_mask`` (``nn.Transformer`` with a
    float causal mask and bool padding masks, as the translation tutorial builds them) works
    but torch warns that the mix is deprecated; shardflow was silent. Same types: silent."""
    for kpm_dtype, expected in (("bool", 1), ("float", 0)):
        th_msgs, th_out = _mismatch_warnings(torch, kpm_dtype)
        sf_msgs, sf_out = _mismatch_warnings(shardflow, kpm_dtype)
        assert len(th_msgs) == expected and sf_msgs == th_msgs, (kpm_dtype, sf_msgs, th_msgs)
        np.testing.assert_allclose(sf_out, th_out, rtol=1e-5, atol=1e-6)
