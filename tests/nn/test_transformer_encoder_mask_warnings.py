"""``TransformerEncoder`` / ``TransformerEncoderLayer`` with a boolean padding mask and a float
attention mask warn as torch does: once per module with its own argument names ("mismatched
src_key_padding_mask and mask" from the encoder, "... and src_mask" from a layer called
directly), after which the masks are float and self-attention does not warn again.
shardflow passed the masks down unchanged, so each layer's ``MultiheadAttention`` warned
("key_padding_mask and attn_mask") instead (found by
``tests/parity/programs/research_ai/attention_masks_checkpoint.py``)."""

import warnings

import numpy as np
import torch

import shardflow


def _run(lib):
    lib.manual_seed(0)
    layer = lib.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    encoder = lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    g = np.random.default_rng(0)
    x = lib.tensor(g.standard_normal((2, 4, 8)).astype(np.float32))
    pad = lib.tensor([[False, False, True, True], [False, False, False, False]])
    causal = lib.nn.Transformer.generate_square_subsequent_mask(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = encoder(x, mask=causal, src_key_padding_mask=pad)
        out_layer = encoder.layers[0](x, src_mask=causal, src_key_padding_mask=pad)
    return [str(w.message) for w in caught], out.detach().numpy(), out_layer.detach().numpy()


def test_encoder_mask_type_mismatch_warns_like_torch():
    th, sf = _run(torch), _run(shardflow)
    assert th[0] == ["Support for mismatched src_key_padding_mask and mask is deprecated. Use same type for both instead.",
                     "Support for mismatched src_key_padding_mask and src_mask is deprecated. Use same type for both instead."]
    assert sf[0] == th[0]
    np.testing.assert_allclose(sf[1], th[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sf[2], th[2], rtol=1e-5, atol=1e-6)
