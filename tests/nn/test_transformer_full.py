"""nn.Transformer, TransformerDecoderLayer and TransformerDecoder against torch: torch's
state_dict loaded into ours (dropout 0), same outputs and gradients of every parameter and
input, with masks and with batch_first both ways."""

import math

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn as nn

pytestmark = [
    pytest.mark.filterwarnings("ignore:enable_nested_tensor is True"),  # torch's fast-path note
    pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask"),
]

D, NHEAD, FF = 8, 2, 16
S, L, N = 5, 4, 3  # source length, target length, batch


def _load(th, m):
    m.load_state_dict({k: sf.tensor(v.detach().numpy()) for k, v in th.state_dict().items()})


def _close(a, b, what):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=2e-5, err_msg=what)


def _seq(rng, length, batch_first, batched=True):
    if not batched:
        return rng.standard_normal((length, D)).astype(np.float32)
    shape = (N, length, D) if batch_first else (length, N, D)
    return rng.standard_normal(shape).astype(np.float32)


def _masks(lib, use):
    """The masks each case passes (``use`` picks which), built the same way in both libs."""
    out = {}
    if "tgt_causal" in use:
        out["tgt_mask"] = lib.nn.Transformer.generate_square_subsequent_mask(L)
    if "src_kpm" in use:
        kpm = np.zeros((N, S), dtype=bool)
        kpm[0, -2:] = True
        kpm[2, -1] = True
        out["src_key_padding_mask"] = lib.tensor(kpm)
        out["memory_key_padding_mask"] = lib.tensor(kpm)
    if "tgt_kpm" in use:
        kpm = np.zeros((N, L), dtype=bool)
        kpm[1, -1] = True
        out["tgt_key_padding_mask"] = lib.tensor(kpm)
    if "memory_mask" in use:
        mm = np.random.default_rng(9).standard_normal((L, S)).astype(np.float32)
        out["memory_mask"] = lib.tensor(mm)
    if "src_bool_mask" in use:
        sm = np.triu(np.ones((S, S), dtype=bool), 1)
        out["src_mask"] = lib.tensor(sm)
    return out


def _compare(th, m, th_args, sf_args, th_kw, sf_kw, what):
    t_out = th(*th_args, **th_kw)
    s_out = m(*sf_args, **sf_kw)
    assert tuple(s_out.shape) == tuple(t_out.shape), what
    _close(s_out.detach().numpy(), t_out.detach().numpy(), f"{what}: output")
    w = np.random.default_rng(5).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.tensor(w)).sum().backward()
    (s_out * sf.tensor(w)).sum().backward()
    for k, (ta, sa) in enumerate(zip(th_args, sf_args)):
        _close(sa.grad.numpy(), ta.grad.numpy(), f"{what}: grad of input {k}")
    t_params = dict(th.named_parameters())
    assert [k for k, _ in m.named_parameters()] == list(t_params)
    for k, p in m.named_parameters():
        _close(p.grad.numpy(), t_params[k].grad.numpy(), f"{what}: grad of {k}")


CASES = [
    (dict(), ("tgt_causal",)),
    (dict(batch_first=True), ("tgt_causal", "src_kpm", "tgt_kpm")),
    (dict(norm_first=True), ("tgt_causal", "memory_mask", "src_bool_mask")),
    (dict(batch_first=True, norm_first=True, activation="gelu"), ("src_kpm",)),
    (dict(bias=False), ()),
]


@pytest.mark.parametrize("kw,use", CASES, ids=[f"{'-'.join(kw) or 'default'}+{'-'.join(u) or 'nomask'}" for kw, u in CASES])
def test_transformer_matches_torch(kw, use):
    torch.manual_seed(0)
    th = torch.nn.Transformer(D, NHEAD, 2, 2, FF, dropout=0.0, **kw)
    m = nn.Transformer(D, NHEAD, 2, 2, FF, dropout=0.0, **kw)
    _load(th, m)
    rng = np.random.default_rng(1)
    bf = kw.get("batch_first", False)
    src, tgt = _seq(rng, S, bf), _seq(rng, L, bf)
    th_args = [torch.tensor(src, requires_grad=True), torch.tensor(tgt, requires_grad=True)]
    sf_args = [sf.tensor(src, requires_grad=True), sf.tensor(tgt, requires_grad=True)]
    _compare(th, m, th_args, sf_args, _masks(torch, use), _masks(sf, use), f"Transformer{kw}")


def test_unbatched_transformer_matches_torch():
    torch.manual_seed(2)
    th = torch.nn.Transformer(D, NHEAD, 1, 1, FF, dropout=0.0)
    m = nn.Transformer(D, NHEAD, 1, 1, FF, dropout=0.0)
    _load(th, m)
    rng = np.random.default_rng(3)
    src, tgt = _seq(rng, S, False, batched=False), _seq(rng, L, False, batched=False)
    _compare(th, m, [torch.tensor(src, requires_grad=True), torch.tensor(tgt, requires_grad=True)],
             [sf.tensor(src, requires_grad=True), sf.tensor(tgt, requires_grad=True)],
             {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(L)},
             {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(L)}, "unbatched")


@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_stack_alone_matches_torch(batch_first):
    torch.manual_seed(4)
    layer_kw = dict(dim_feedforward=FF, dropout=0.0, batch_first=batch_first)
    th = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(D, NHEAD, **layer_kw), 2,
                                     norm=torch.nn.LayerNorm(D))
    m = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, NHEAD, **layer_kw), 2, norm=nn.LayerNorm(D))
    _load(th, m)
    rng = np.random.default_rng(5)
    tgt, mem = _seq(rng, L, batch_first), _seq(rng, S, batch_first)
    _compare(th, m, [torch.tensor(tgt, requires_grad=True), torch.tensor(mem, requires_grad=True)],
             [sf.tensor(tgt, requires_grad=True), sf.tensor(mem, requires_grad=True)],
             {"tgt_mask": torch.nn.Transformer.generate_square_subsequent_mask(L), "tgt_is_causal": True},
             {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(L), "tgt_is_causal": True},
             f"TransformerDecoder(batch_first={batch_first})")


def test_decoder_layer_names_match_torch():
    th, m = torch.nn.TransformerDecoderLayer(D, NHEAD, FF), nn.TransformerDecoderLayer(D, NHEAD, FF)
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in th.state_dict().items()]


def test_generate_square_subsequent_mask_equals_torch():
    for sz in (1, 4):
        ours = nn.Transformer.generate_square_subsequent_mask(sz).numpy()
        ref = torch.nn.Transformer.generate_square_subsequent_mask(sz).numpy()
        np.testing.assert_array_equal(ours, ref)
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=sf.float64).dtype == sf.float64


def test_causal_mask_detection_follows_torch():
    from shardflow.nn.modules.transformer import _detect_is_causal_mask

    causal = nn.Transformer.generate_square_subsequent_mask(4)
    assert _detect_is_causal_mask(causal, None, 4) is True
    assert _detect_is_causal_mask(causal, False, 4) is False
    assert _detect_is_causal_mask(sf.zeros(4, 4), None, 4) is False
    assert _detect_is_causal_mask(causal, None, 5) is False  # size mismatch: not causal
    assert _detect_is_causal_mask(None, None, 4) is False


def test_transformer_reinitialises_matrices_with_xavier_uniform():
    m = nn.Transformer(D, NHEAD, 1, 1, FF)
    w = m.decoder.layers[0].linear1.weight.numpy()
    bound = math.sqrt(6.0 / (D + FF))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.all(m.encoder.norm.weight.numpy() == 1)  # 1-D parameters keep their init


def test_shape_errors_name_the_sizes():
    m = nn.Transformer(D, NHEAD, 1, 1, FF)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal: got 3 and 2"):
        m(sf.zeros(S, 3, D), sf.zeros(L, 2, D))
    with pytest.raises(RuntimeError, match=r"the feature number of src and tgt must be equal to d_model \(8\)"):
        m(sf.zeros(S, 3, D), sf.zeros(L, 3, D + 1))
