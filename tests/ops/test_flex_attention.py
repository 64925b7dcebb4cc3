"""``torch.nn.attention.flex_attention`` against torch 2.13 (CPU).

torch 2.13 runs flex_attention's forward eagerly on CPU (an unfused path, with a warning) but
refuses its backward there ("FlexAttention does not support backward on CPU"), so forward
values, lse and the block-mask lists are compared with torch's own flex_attention, and
gradients with a reference written in plain torch ops (scores, score_mod on broadcast indices,
masking, softmax) and differentiated by torch's autograd.
"""

import numpy as np
import pytest
import torch
from torch.nn.attention import flex_attention as tfa

import shardflow as sf
from shardflow.nn.attention import flex_attention as sfa

pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")


def _pair(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sf.tensor(a), torch.tensor(a)


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _torch_reference(q, k, v, score_mod=None, mask_mod=None, scale=None):
    """flex attention in plain torch ops (differentiable by torch's autograd)."""
    B, H, L, E = q.shape
    S = k.shape[2]
    scale = E ** -0.5 if scale is None else scale
    s = q @ k.transpose(-1, -2) * scale
    idx = (torch.arange(B).view(B, 1, 1, 1), torch.arange(H).view(1, H, 1, 1),
           torch.arange(L).view(1, 1, L, 1), torch.arange(S).view(1, 1, 1, S))
    if score_mod is not None:
        s = score_mod(s, *idx)
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(*idx).expand(B, H, L, S), float("-inf"))
    return s.softmax(-1) @ v, s.logsumexp(-1)


def test_forward_and_lse_match_torch_with_score_mod_and_block_mask():
    (q, tq), (k, tk), (v, tv) = _pair(2, 2, 8, 4, seed=1), _pair(2, 2, 8, 4, seed=2), _pair(2, 2, 8, 4, seed=3)
    bias, tbias = _pair(2, seed=4)

    def sm(lib_bias):
        return lambda score, b, h, q_idx, kv_idx: score + (q_idx - kv_idx) * 0.1 + lib_bias[h]

    out, aux = sfa.flex_attention(q, k, v, score_mod=sm(bias), block_mask=sfa.create_block_mask(_causal, 2, 2, 8, 8),
                                  return_aux=sfa.AuxRequest(lse=True))
    tout, taux = tfa.flex_attention(tq, tk, tv, score_mod=sm(tbias),
                                    block_mask=tfa.create_block_mask(_causal, 2, 2, 8, 8, device="cpu"),
                                    return_aux=tfa.AuxRequest(lse=True))
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(aux.lse.numpy(), taux.lse.numpy(), rtol=1e-5, atol=1e-6)
    assert aux.max_scores is None and type(aux).__name__ == "AuxOutput"


def test_gradients_through_score_mod_and_mask_match_torch_reference():
    (q, tq), (k, tk), (v, tv) = _pair(1, 2, 6, 4, seed=5), _pair(1, 2, 6, 4, seed=6), _pair(1, 2, 6, 3, seed=7)
    bias, tbias = _pair(2, 11, seed=8)  # a learned relative-position bias per head
    for t in (q, k, v, bias, tq, tk, tv, tbias):
        t.requires_grad_(True)

    def sm(table):
        return lambda score, b, h, q_idx, kv_idx: score + table[h, q_idx - kv_idx + 5]

    window = sfa.and_masks(_causal, lambda b, h, qi, ki: qi - ki < 3)
    out, aux = sfa.flex_attention(q, k, v, score_mod=sm(bias),
                                  block_mask=sfa.create_block_mask(window, None, None, 6, 6, BLOCK_SIZE=2),
                                  return_aux=sfa.AuxRequest(lse=True))
    lse = aux.lse
    tout, tlse = _torch_reference(tq, tk, tv, sm(tbias), lambda b, h, qi, ki: (qi >= ki) & (qi - ki < 3))
    w, tw = _pair(*out.shape, seed=9)
    ((out * w).sum() + lse.sum()).backward()
    ((tout * tw).sum() + tlse.sum()).backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    for a, b in ((q, tq), (k, tk), (v, tv), (bias, tbias)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_float64_gradcheck():
    q, k, v = (sf.randn(1, 1, 4, 3, dtype=sf.float64, requires_grad=True) for _ in range(3))
    sf.autograd.gradcheck(lambda q, k, v: sfa.flex_attention(
        q, k, v, score_mod=lambda s, b, h, qi, ki: s * 0.5 + qi * 0.1,
        block_mask=sfa.create_block_mask(_causal, 1, 1, 4, 4)), (q, k, v))


def test_block_mask_lists_and_sparsity_match_torch():
    win = lambda b, h, qi, ki: (qi >= ki) & (qi - ki < 70)  # noqa: E731
    bm = sfa.create_block_mask(win, 1, 2, 200, 200, BLOCK_SIZE=32)
    tbm = tfa.create_block_mask(win, 1, 2, 200, 200, device="cpu", BLOCK_SIZE=32)
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks",
                 "q_indices", "full_q_num_blocks", "full_q_indices"):
        np.testing.assert_array_equal(getattr(bm, name).numpy(), getattr(tbm, name).numpy(), err_msg=name)
        assert getattr(bm, name).dtype == sf.int32
    np.testing.assert_array_equal(bm.to_dense().numpy(), tbm.to_dense().numpy())
    assert bm.shape == tbm.shape and bm.BLOCK_SIZE == tbm.BLOCK_SIZE
    assert bm.sparsity() == pytest.approx(tbm.sparsity())
    assert bm[0, 1].shape == tbm[0, 1].shape and bm[:, 1].shape == tbm[:, 1].shape
    np.testing.assert_array_equal(bm[:, 1].kv_indices.numpy(), tbm[:, 1].kv_indices.numpy())
    for flatten in (True, False):
        ours, theirs = bm.as_tuple(flatten), tbm.as_tuple(flatten)
        assert len(ours) == len(theirs) and ours[:1] == theirs[:1] and ours[-3:-1] == theirs[-3:-1]
    # a mask rebuilt from its key-block lists computes the same attention
    (q, tq), (k, tk), (v, tv) = _pair(1, 2, 200, 4, seed=1), _pair(1, 2, 200, 4, seed=2), _pair(1, 2, 200, 4, seed=3)
    rebuilt = sfa.BlockMask.from_kv_blocks(bm.kv_num_blocks, bm.kv_indices, bm.full_kv_num_blocks,
                                           bm.full_kv_indices, BLOCK_SIZE=32, mask_mod=win, seq_lengths=(200, 200))
    out = sfa.flex_attention(q, k, v, block_mask=rebuilt)
    np.testing.assert_allclose(out.numpy(), tfa.flex_attention(tq, tk, tv, block_mask=tbm).numpy(), rtol=1e-5, atol=1e-6)


def test_gqa_scale_lengths_and_fully_masked_rows_match_torch():
    (q, tq), (k, tk), (v, tv) = _pair(1, 4, 8, 4, seed=1), _pair(1, 2, 8, 4, seed=2), _pair(1, 2, 8, 4, seed=3)
    sm = lambda s, b, h, qi, ki: s * (h + 1)  # noqa: E731  (the query head's index)
    np.testing.assert_allclose(sfa.flex_attention(q, k, v, score_mod=sm, enable_gqa=True).numpy(),
                               tfa.flex_attention(tq, tk, tv, score_mod=sm, enable_gqa=True).numpy(), rtol=1e-5, atol=1e-6)
    (q, tq), (k, tk), (v, tv) = _pair(1, 1, 5, 4, seed=4), _pair(1, 1, 7, 4, seed=5), _pair(1, 1, 7, 6, seed=6)
    np.testing.assert_allclose(sfa.flex_attention(q, k, v, scale=0.3).numpy(),
                               tfa.flex_attention(tq, tk, tv, scale=0.3).numpy(), rtol=1e-5, atol=1e-6)
    never = lambda b, h, qi, ki: ki > qi + 100  # noqa: E731
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        out, lse = sfa.flex_attention(q, q, q, block_mask=sfa.create_block_mask(never, None, None, 5, 5), return_lse=True)
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        tout, tlse = tfa.flex_attention(tq, tq, tq, return_lse=True,
                                        block_mask=tfa.create_block_mask(never, None, None, 5, 5, device="cpu"))
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    np.testing.assert_array_equal(lse.numpy(), tlse.numpy())  # -inf, as torch


def test_mask_combinators_and_create_mask_match_torch():
    T = torch.tensor
    for combo in ("and", "or"):
        sf_m = getattr(sfa, f"{combo}_masks")(_causal, lambda b, h, qi, ki: ki == 3)
        t_m = getattr(tfa, f"{combo}_masks")(_causal, lambda b, h, qi, ki: ki == 3)
        np.testing.assert_array_equal(sfa.create_mask(sf_m, 1, 1, 5, 5).numpy(),
                                      tfa.create_mask(t_m, 1, 1, 5, 5, device="cpu").numpy())
    assert bool(sfa.and_masks()(0, 0, sf.tensor(1), sf.tensor(2))) is bool(tfa.and_masks()(T(0), T(0), T(1), T(2)))
    assert bool(sfa.noop_mask(0, 0, 1, 2)) is bool(tfa.noop_mask(T(0), T(0), T(1), T(2))) is True
    assert sfa.create_mask(_causal, None, None, 3, 3).dtype == sf.bool


def test_bfloat16_computes_in_float32_as_torch():
    (q, tq) = _pair(1, 1, 6, 4, seed=3)
    out, lse = sfa.flex_attention(q.bfloat16(), q.bfloat16(), q.bfloat16(), return_aux=sfa.AuxRequest(lse=True))
    tout, tlse = tfa.flex_attention(tq.bfloat16(), tq.bfloat16(), tq.bfloat16(), return_aux=tfa.AuxRequest(lse=True))
    assert out.dtype == sf.bfloat16 and lse.lse.dtype == sf.float32 == getattr(sf, str(tlse.lse.dtype).split(".")[1])
    np.testing.assert_allclose(out.float().numpy(), tout.float().numpy(), rtol=1e-2, atol=1e-2)


def test_errors_match_torch():
    q, tq = _pair(1, 4, 8, 4)
    k, tk = _pair(1, 2, 8, 4)
    cases = [
        (lambda m, a, b: m.flex_attention(a, b, b), ValueError, "Try setting enable_gqa=True"),
        (lambda m, a, b: m.flex_attention(a[0], a[0], a[0]), NotImplementedError, "must be 4D tensors"),
        (lambda m, a, b: m.flex_attention(a, a, a, return_lse=True, return_aux=m.AuxRequest(lse=True)),
         ValueError, "Cannot specify both return_lse and return_aux"),
        (lambda m, a, b: m.flex_attention(a, a, a, return_aux=m.AuxRequest(max_scores=True)),
         NotImplementedError, "max scores"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn(tfa, tq, tk)
        with pytest.raises(exc, match=msg):
            fn(sfa, q, k)
    big = sfa.create_block_mask(_causal, 1, 1, 16, 16)
    with pytest.raises(ValueError, match="block_mask was created for"):
        sfa.flex_attention(q, q, q, block_mask=big)
    with pytest.raises(ValueError, match="block_mask was created for"):
        tfa.flex_attention(tq, tq, tq, block_mask=tfa.create_block_mask(_causal, 1, 1, 256, 256, device="cpu"))
