"""Model files of well-known repositories, built at tiny sizes on torch and, with their
imports rewritten, on shardflow, from the same ``manual_seed`` (no weight copying: shardflow
draws torch's numbers, docs/COMPAT.md "Random seeds"), compared on ``print(model)``, the
state dict, outputs, gradients, a few optimizer steps and each file's own special paths:

* openai/whisper ``whisper/model.py``: the dtype-casting ``LayerNorm``/``Linear``/``Conv1d``,
  ``sinusoids``, SDPA and ``disable_sdpa()``, the kv-cache forward hooks, the sparse
  ``alignment_heads`` buffer; float32, and float16/bfloat16 mel spectrograms on CPU.
* openai/CLIP ``clip/model.py``: ModifiedResNet with ``AttentionPool2d``
  (``F.multi_head_attention_forward`` with separate projection weights), VisionTransformer,
  the text transformer's causal mask, ``build_model`` from a state dict, ``convert_weights``
  to float16, ``logit_scale``.
* facebookresearch/detr ``models/transformer.py``: post-norm and pre-norm encoder-decoder
  with positional encodings, key padding masks and dropout masks from the seed, AdamW.
* facebookresearch/segment-anything ``segment_anything/modeling``: the ViTDet image encoder
  (windows with padding, decomposed relative positions), prompt encoder, two-way
  transformer and mask decoder, loaded as one package; a fine-tuning step and ``Sam.forward``.

See ``test_public_programs.py`` and docs/COMPAT.md, "Public programs".
"""

import base64
import functools
import gzip
import sys
import types
import warnings

import numpy as np
import pytest
import torch

import shardflow
from shardflow.testing.parity import load_torch_file, refuse_torch_names, rewrite_imports

from .programs._harness import HERE, assert_close, load_pair

pytestmark = pytest.mark.usefixtures("torch_single_thread")


def _text(obj) -> str:
    """``repr`` with shardflow's ``shardflow.`` prefix read as torch's (``torch.sparse_coo``)."""
    return repr(obj).replace("shardflow.", "torch.")


def _np(t):
    return t.detach().float().numpy().copy()


# ---------------------------------------------------------------- whisper

def _whisper(prog, lib):
    """A tiny Whisper from ``manual_seed(0)``. The text decoder's ``positional_embedding`` is
    ``torch.empty`` in the file (a checkpoint fills it): normal_ here, from the same seed."""
    lib.manual_seed(0)
    dims = prog.ModelDimensions(n_mels=8, n_audio_ctx=10, n_audio_state=16, n_audio_head=2,
                                n_audio_layer=2, n_vocab=50, n_text_ctx=8, n_text_state=16,
                                n_text_head=2, n_text_layer=2)
    model = prog.Whisper(dims)
    lib.nn.init.normal_(model.decoder.positional_embedding, std=0.02)
    mel = lib.randn(2, 8, 20)  # conv2's stride 2: 10 audio positions (> n_text_ctx, as 1500 > 448)
    tokens = lib.randint(0, 50, (2, 6))
    return model, mel, tokens


def _kv_decode(lib, model, xa, tokens):
    """Greedy-decoding's use of ``install_kv_cache_hooks`` (whisper/decoding.py): 3 prompt
    tokens, then one token per call with the cache; returns the logits and the cache's shapes."""
    cache, hooks = model.install_kv_cache_hooks()
    steps = [model.decoder(tokens[:, :3], xa, kv_cache=cache)]
    for i in (3, 4):
        steps.append(model.decoder(tokens[:, i:i + 1], xa, kv_cache=cache))
    for h in hooks:
        h.remove()
    return _np(lib.cat(steps, 1)), sorted(tuple(v.shape) for v in cache.values())


def _whisper_run(prog, lib):
    model, mel, tokens = _whisper(prog, lib)
    out = {"repr": _text(model), "state": {k: _np(v) for k, v in model.state_dict().items()},
           "alignment_heads": _text(model.alignment_heads),
           "mask": _np(model.decoder.mask), "sinusoids": _np(prog.sinusoids(10, 16))}
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for step in range(3):
        logits = model(mel, tokens[:, :-1])
        loss = lib.nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        if step == 0:
            out["grads"] = {k: _np(p.grad) for k, p in model.named_parameters()}
        opt.step()
        losses.append(loss.item())
    out["losses"] = losses
    out["after"] = {k: _np(v) for k, v in model.state_dict().items()}
    with torch.no_grad() if lib is torch else shardflow.no_grad():
        xa = model.embed_audio(mel)
        out["logits"] = _np(model.logits(tokens[:, :5], xa))
        with prog.disable_sdpa():  # the explicit softmax path (it also returns qk)
            out["logits_no_sdpa"] = _np(model.logits(tokens[:, :5], xa))
            blk = model.decoder.blocks[0]
            out["qk"] = _np(blk.attn(blk.attn_ln(model.decoder.token_embedding(tokens)), mask=model.decoder.mask)[1])
        out["kv"], out["cache_shapes"] = _kv_decode(lib, model, xa, tokens)
    dump = base64.b85encode(gzip.compress(np.array([[0, 1], [1, 0]], dtype=bool).tobytes()))
    model.set_alignment_heads(dump)
    out["set_alignment_heads"] = _text(model.alignment_heads)
    return out


def test_whisper_model_trains_like_torch():
    """whisper/model.py at a tiny ModelDimensions from ``manual_seed(0)``: the same
    ``print(model)``, state-dict keys and initial weights (bitwise, and the ``-inf``
    ``triu_`` mask; ``sinusoids`` to a float32 ulp, 3e-7: torch's ``exp``/``sin``/``cos``
    are SLEEF's, shardflow's NumPy's), the sparse ``alignment_heads`` buffer printed as torch's
    (and after ``set_alignment_heads`` from a base85 gzip dump); the first loss's gradients,
    3 AdamW losses and the weights after them 1e-5; logits through SDPA, through the explicit
    ``disable_sdpa()`` path (and its ``qk``) and through the kv-cache hooks (prompt, then one
    token per call: the cached keys grow 3 -> 5 and the cross-attention's stay at the audio
    length) 1e-5, with the cached decode equal to the full forward."""
    th_prog, sf_prog = load_pair("whisper/model")
    th, sf = _whisper_run(th_prog, torch), _whisper_run(sf_prog, shardflow)
    for key in ("repr", "alignment_heads", "set_alignment_heads", "cache_shapes"):
        assert sf[key] == th[key], key
    assert "layout=torch.sparse_coo" in th["alignment_heads"]
    assert list(sf["state"]) == list(th["state"])
    for k, v in th["state"].items():
        if k != "encoder.positional_embedding":  # sinusoids, below
            np.testing.assert_array_equal(sf["state"][k], v, err_msg=f"initial {k}")
    np.testing.assert_array_equal(sf["mask"], th["mask"])
    # torch's float32 exp/sin/cos are SLEEF's (exp correctly rounded here), shardflow's
    # NumPy's: 1 float32 ulp in 4 of 8 ``inv_timescales`` and a third of the table
    assert_close(sf["sinusoids"], th["sinusoids"], "sinusoids", 0, 3e-7)
    assert_close(sf["state"]["encoder.positional_embedding"], th["sinusoids"], "encoder pos", 0, 3e-7)
    assert_close(sf["losses"], th["losses"], "losses", 1e-5, 1e-6)
    for k, v in th["grads"].items():
        assert_close(sf["grads"][k], v, f"grad {k}", 1e-4, 1e-6)
    for k, v in th["after"].items():
        assert_close(sf["after"][k], v, f"after 3 steps {k}", 1e-5, 1e-6)
    for key in ("logits", "logits_no_sdpa", "kv"):
        assert_close(sf[key], th[key], key, 1e-5, 1e-5)
    assert_close(sf["qk"], th["qk"], "qk", 1e-5, 1e-5)
    assert sf["cache_shapes"][0] == (2, 5, 16) and (2, 10, 16) in sf["cache_shapes"]
    assert_close(sf["kv"], sf["logits"], "kv-cache decode vs full forward", 1e-5, 1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_whisper_half_mel_like_torch(dtype):
    """whisper's decoding with ``fp16``: float32 weights, a half mel spectrogram; the
    subclasses cast the weights to the input's dtype (``Conv1d._conv_forward``, ``Linear``)
    and run ``LayerNorm`` in float32. The audio features are torch's bits (this test found
    the float16 convolution's double rounding: ``tests/ops/test_conv_half_like_torch.py``);
    the float32 logits of the float16 decoder within 2 float16 ulps of torch (0.0078 at 17
    measured: a float32 LayerNorm ulp, from its reduction order, flips a float16 rounding
    in 1 of 192 elements, and the layers after carry it), bfloat16 bitwise."""
    th_prog, sf_prog = load_pair("whisper/model")
    runs = []
    for prog, lib in ((th_prog, torch), (sf_prog, shardflow)):
        model, mel, tokens = _whisper(prog, lib)
        xa = model.embed_audio(mel.to(getattr(lib, dtype)))
        logits = model.logits(tokens[:, :5], xa)
        kv, _ = _kv_decode(lib, model, xa, tokens)
        runs.append((str(xa.dtype), str(logits.dtype), _np(xa), _np(logits), kv))
    (th_dt, th_ldt, th_xa, th_lo, th_kv), (sf_dt, sf_ldt, sf_xa, sf_lo, sf_kv) = runs
    assert sf_dt.replace("shardflow", "torch") == th_dt == f"torch.{dtype}"
    assert sf_ldt.replace("shardflow", "torch") == th_ldt == "torch.float32"
    np.testing.assert_array_equal(sf_xa, th_xa)
    atol = 0 if dtype == "bfloat16" else 2 * 2.0 ** -10 * 16
    assert_close(sf_lo, th_lo, "logits", 0, atol)
    assert_close(sf_kv, th_kv, "kv-cache logits", 0, atol)


# ---------------------------------------------------------------- CLIP

_CLIP_TEXT = dict(context_length=8, vocab_size=50, transformer_width=64, transformer_heads=1,
                  transformer_layers=2)  # heads = width // 64, as build_model infers them
_CLIP_VISION = {
    "vit": dict(image_resolution=32, vision_layers=2, vision_width=64, vision_patch_size=8),
    "resnet": dict(image_resolution=32, vision_layers=(1, 1, 1, 1), vision_width=8, vision_patch_size=None),
}
_CLIP_LR = 1e-4


def _clip_run(prog, lib, kind):
    """A tiny CLIP from ``manual_seed(0)``, its contrastive loss (CLIP paper's symmetric
    cross-entropy over ``logits_per_image``/``logits_per_text``) for 3 Adam steps, then the
    ``build_model`` of its initial state dict (``convert_weights`` to float16, eval) on the
    same batch."""
    lib.manual_seed(0)
    model = prog.CLIP(embed_dim=32, **_CLIP_VISION[kind], **_CLIP_TEXT)
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    out = {"repr": _text(model), "state": {k: _np(v) for k, v in start.items()},
           "logit_scale": model.logit_scale.item(), "dtype": _text(model.dtype)}
    image = lib.randn(4, 3, 32, 32)
    text = lib.randint(0, 49, (4, 8))
    text[:, -1] = 49  # the end-of-text token is the highest id: encode_text's argmax
    labels = lib.arange(4)
    opt = lib.optim.Adam(model.parameters(), lr=_CLIP_LR)
    losses = []
    for step in range(3):
        logits_per_image, logits_per_text = model(image, text)
        loss = (lib.nn.functional.cross_entropy(logits_per_image, labels)
                + lib.nn.functional.cross_entropy(logits_per_text, labels)) / 2
        opt.zero_grad()
        loss.backward()
        if step == 0:
            out["logits"] = _np(logits_per_image)
            out["grads"] = {k: _np(p.grad) for k, p in model.named_parameters()}
        opt.step()
        losses.append(loss.item())
    out["losses"], out["after"] = losses, {k: _np(v) for k, v in model.state_dict().items()}
    half = prog.build_model(dict(start))
    out["half_repr"] = _text(half)
    out["half_dtypes"] = [(k, _text(v.dtype)) for k, v in half.state_dict().items()]
    with torch.no_grad() if lib is torch else shardflow.no_grad():
        li, lt = half(image, text)
        out["half_logits"], out["half_logits_dtype"] = _np(li), _text(li.dtype)
        out["half_image"] = _np(half.encode_image(image))
        out["half_text"] = _np(half.encode_text(text))
    return out


@pytest.mark.parametrize("kind", ["vit", "resnet"])
def test_clip_model_trains_and_builds_like_torch(kind):
    """clip/model.py, VisionTransformer and ModifiedResNet (AttentionPool2d through
    ``F.multi_head_attention_forward`` with separate q/k/v weights and a ``c_proj`` that
    narrows 256 -> 32: a reshape error before this test), from ``manual_seed(0)``: the same
    ``print(model)``, state dict and initial weights (bitwise: ``initialize_parameters``'
    ``normal_`` calls, the zeroed ``bn3.weight``), ``logit_scale`` ``log(1/0.07)``; logits,
    first-step gradients (to 1e-5 of each one's largest entry) and 3 Adam losses 1e-5
    (measured 2e-6). The weights after 3 steps
    within 3 * lr (the attention key biases within 6 * lr: two noise signs can differ at
    each step; session 40's bit-level op changes flipped two): those and the biases that only feed a batch norm have
    zero gradient in exact arithmetic, so Adam steps them by up to ``lr`` on rounding noise
    (1.5e-4 measured) and the layers after carry it (3.8e-5). Then ``build_model`` on the
    initial state dict: the same printout, float16 exactly where ``convert_weights`` puts it,
    and float16 features and logits within 4 float16 ulps of torch (this test found the
    float16 ``AvgPool2d`` and convolution roundings and MultiheadAttention's SDPA path,
    after which the image features are torch's bits but for a float32 LayerNorm ulp that
    flips a float16 rounding now and then)."""
    th_prog, sf_prog = load_pair("clip/model")
    th, sf = _clip_run(th_prog, torch, kind), _clip_run(sf_prog, shardflow, kind)
    for key in ("repr", "dtype", "half_repr", "half_dtypes", "half_logits_dtype"):
        assert sf[key] == th[key], key
    assert sf["logit_scale"] == th["logit_scale"]
    assert list(sf["state"]) == list(th["state"])
    for k, v in th["state"].items():
        np.testing.assert_array_equal(sf["state"][k], v, err_msg=f"initial {k}")
    assert_close(sf["logits"], th["logits"], "logits", 1e-5, 1e-5)
    for k, v in th["grads"].items():
        # to 1e-5 of each gradient's largest entry (a cancelling sum's small entries carry
        # the large ones' rounding: 3.6e-6 of 2.9 in the positional embedding's), and 1e-7
        # for the key biases, whose exact gradient is 0 (noise)
        assert_close(sf["grads"][k], v, f"grad {k}", 1e-4, 1e-5 * np.abs(v).max() + 1e-7)
    assert_close(sf["losses"], th["losses"], "losses", 1e-5, 1e-6)
    for k, v in th["after"].items():
        got, key_part = np.asarray(sf["after"][k]), np.zeros(np.shape(v), bool)
        if k.endswith("k_proj.bias"):
            key_part[...] = True
        elif k.endswith("in_proj_bias"):
            e = len(v) // 3
            key_part[e:2 * e] = True
        # an attention key bias's gradient is rounding noise (exactly 0: softmax ignores a shift
        # shared by every key), and Adam steps it by +-lr on that noise's sign: after 3 steps
        # two runs differ by up to 2 * 3 * lr there (seen: 3.1e-4 when two noise signs flipped)
        assert_close(got[key_part], np.asarray(v)[key_part], f"after 3 steps {k} (key bias)", 0, 6 * _CLIP_LR)
        assert_close(got[~key_part], np.asarray(v)[~key_part], f"after 3 steps {k}", 1e-5, 3 * _CLIP_LR)
    assert ("torch.float16" in dict(th["half_dtypes"]).values()) and th["half_logits_dtype"] == "torch.float16"
    for key in ("half_image", "half_text", "half_logits"):
        scale = np.abs(th[key]).max()
        assert_close(sf[key], th[key], key, 0, 4 * scale * 2.0 ** -10)


# ---------------------------------------------------------------- DETR

_DETR_LR = 1e-4


def _detr_run(prog, lib, pre_norm):
    """DETR's Transformer (tiny: d_model 16, 2 heads, 2+2 layers, dropout 0.1 as DETR trains)
    from ``manual_seed(0)`` on a 3x4 feature map with a key padding mask (the second image's
    last column is padding), DETR's 5 object queries and a positional encoding; 3 AdamW steps
    (DETR's optimizer) on a loss of both outputs, in training mode (torch's dropout masks
    from the seed), then the eval forward."""
    lib.manual_seed(0)
    model = prog.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
                             dim_feedforward=32, dropout=0.1, normalize_before=pre_norm,
                             return_intermediate_dec=True)
    out = {"repr": _text(model), "state": {k: _np(v) for k, v in model.state_dict().items()}}
    src, pos = lib.randn(2, 16, 3, 4), lib.randn(2, 16, 3, 4)
    mask = lib.zeros(2, 3, 4, dtype=lib.bool)
    mask[1, :, 3:] = True
    query_embed = lib.randn(5, 16)
    opt = lib.optim.AdamW(model.parameters(), lr=_DETR_LR, weight_decay=1e-4)
    losses = []
    for step in range(3):
        hs, memory = model(src, mask, query_embed, pos)
        loss = hs.square().mean() + memory.abs().mean()
        opt.zero_grad()
        loss.backward()
        if step == 0:
            out["hs"], out["memory"] = _np(hs), _np(memory)
            out["grads"] = {k: _np(p.grad) for k, p in model.named_parameters()}
        opt.step()
        losses.append(loss.item())
    out["losses"], out["after"] = losses, {k: _np(v) for k, v in model.state_dict().items()}
    out["shapes"] = (tuple(hs.shape), tuple(memory.shape))
    model.eval()
    with torch.no_grad() if lib is torch else shardflow.no_grad():
        out["eval_memory"] = _np(model(src, mask, query_embed, pos)[1])
    return out


@pytest.mark.parametrize("pre_norm", [False, True])
def test_detr_transformer_trains_like_torch(pre_norm):
    """detr models/transformer.py, post-norm (DETR's default) and pre-norm: the same
    ``print(model)`` (``_get_clones``' deep copies), state dict and initial weights (bitwise:
    ``xavier_uniform_`` on every matrix), the first step's decoder stack ``hs`` (2 layers x
    batch x 5 queries x 16) and encoder memory 1e-5, its gradients (to 1e-5 of the largest
    entry), 3 AdamW losses 1e-5 (3e-6 measured) with torch's dropout masks, and the weights
    after them within 4 * lr (3.07e-4 measured: an Adam step can exceed lr a little). Not
    compared after the steps: the decoder's output. DETR's decoder starts from
    ``tgt = zeros``, so its first self-attention returns ``out_proj.bias`` (zero at init) at
    every query and post-norm's ``norm1`` normalizes that zero vector: the bias's gradient
    is a cancelling sum (2e-6 of 1e-2 terms; 3e-6 apart, compared to 5e-6), AdamW steps it
    by lr either way, and the LayerNorm turns 1e-4 into O(1) differences in ``hs`` (0.5 in
    torch vs shardflow: a property of the model, not of either framework). The encoder
    memory does not go through it: eval memory 1e-4."""
    th_prog, sf_prog = load_pair("detr/transformer")
    th, sf = _detr_run(th_prog, torch, pre_norm), _detr_run(sf_prog, shardflow, pre_norm)
    assert sf["repr"] == th["repr"] and sf["shapes"] == th["shapes"] == ((2, 2, 5, 16), (2, 16, 3, 4))
    assert list(sf["state"]) == list(th["state"])
    for k, v in th["state"].items():
        np.testing.assert_array_equal(sf["state"][k], v, err_msg=f"initial {k}")
    assert_close(sf["hs"], th["hs"], "hs", 1e-5, 1e-5)
    assert_close(sf["memory"], th["memory"], "memory", 1e-5, 1e-5)
    largest = max(np.abs(v).max() for v in th["grads"].values())
    for k, v in th["grads"].items():
        # to 1e-5 of the model's largest gradient entry; the first decoder self-attention's
        # biases feed LayerNorm(0): their gradients are sums that cancel to ~2e-6 from terms
        # ~1e-2 (noise in either framework: 3e-6 apart)
        noise = 5e-6 if k.startswith("decoder.layers.0.self_attn.") and k.endswith("bias") else 0
        assert_close(sf["grads"][k], v, f"grad {k}", 1e-4, 1e-5 * largest + noise)
    assert_close(sf["losses"], th["losses"], "losses", 1e-5, 1e-6)
    for k, v in th["after"].items():
        assert_close(sf["after"][k], v, f"after 3 steps {k}", 1e-5, 4 * _DETR_LR)
    assert_close(sf["eval_memory"], th["eval_memory"], "eval memory", 1e-4, 1e-4)


# ---------------------------------------------------------------- segment-anything

_SAM_FILES = ("common", "transformer", "image_encoder", "prompt_encoder", "mask_decoder", "sam")


def _load_sam(use_sf: bool) -> types.ModuleType:
    """segment_anything/modeling's files as one package (``sam_modeling_<th|sf>``), so that
    their relative imports (``from .common import LayerNorm2d``) run as written; on
    shardflow each file's imports are rewritten first."""
    pkg_name = f"sam_modeling_{'sf' if use_sf else 'th'}"
    package = types.ModuleType(pkg_name)
    package.__path__ = []
    sys.modules[pkg_name] = package
    for name in _SAM_FILES:
        path = HERE / "segment_anything" / f"{name}.py"
        source = rewrite_imports(path.read_text()) if use_sf else path.read_text()
        module = types.ModuleType(f"{pkg_name}.{name}")
        module.__file__, module.__package__ = str(path), pkg_name
        sys.modules[module.__name__] = module
        exec(compile(source, str(path), "exec"), module.__dict__)
        if use_sf:
            refuse_torch_names(module)
        setattr(package, name, module)
    return package


def _sam(pkg, lib):
    """segment_anything/build_sam.py's ``_build_sam`` at tiny sizes (64-pixel images, 8-pixel
    patches, windows of 3 over the 8x8 tokens: padded to 9, one global block, relative
    positions, LayerNorm eps 1e-6), from ``manual_seed(0)``."""
    lib.manual_seed(0)
    image_size, patch, embed = 64, 8, 16
    return pkg.sam.Sam(
        image_encoder=pkg.image_encoder.ImageEncoderViT(
            depth=2, embed_dim=16, img_size=image_size, mlp_ratio=4,
            norm_layer=functools.partial(lib.nn.LayerNorm, eps=1e-6), num_heads=2,
            patch_size=patch, qkv_bias=True, use_rel_pos=True, global_attn_indexes=(1,),
            window_size=3, out_chans=embed),
        prompt_encoder=pkg.prompt_encoder.PromptEncoder(
            embed_dim=embed, image_embedding_size=(image_size // patch, image_size // patch),
            input_image_size=(image_size, image_size), mask_in_chans=8),
        mask_decoder=pkg.mask_decoder.MaskDecoder(
            num_multimask_outputs=3,
            transformer=pkg.transformer.TwoWayTransformer(depth=2, embedding_dim=embed, mlp_dim=32, num_heads=2),
            transformer_dim=embed, iou_head_depth=3, iou_head_hidden_dim=16),
        pixel_mean=[123.675, 116.28, 103.53], pixel_std=[58.395, 57.12, 57.375])


def _sam_inputs(lib):
    g = np.random.default_rng(0)
    images = [lib.tensor(g.uniform(0, 255, (3, 64, 48)).astype(np.float32)),
              lib.tensor(g.uniform(0, 255, (3, 56, 64)).astype(np.float32))]
    return [
        {"image": images[0], "original_size": (80, 60),
         "point_coords": lib.tensor([[[10.0, 20.0], [30.0, 5.0]], [[40.0, 40.0], [2.0, 60.0]]]),
         "point_labels": lib.tensor([[1, 0], [1, 1]])},
        {"image": images[1], "original_size": (56, 64),
         "boxes": lib.tensor([[4.0, 6.0, 40.0, 30.0]]),
         "mask_inputs": lib.tensor(g.standard_normal((1, 1, 32, 32)).astype(np.float32))},
    ]


def _sam_run(pkg, lib):
    model = _sam(pkg, lib)
    out = {"repr": _text(model), "state": {k: _np(v) for k, v in model.state_dict().items()}}
    batch = _sam_inputs(lib)
    # fine-tuning, SAM-style: the image embeddings once, prompts through the prompt encoder,
    # a BCE loss of the low-resolution masks plus the IoU head's MSE, 3 Adam steps
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    target = lib.tensor((np.random.default_rng(1).uniform(size=(2, 3, 32, 32)) > 0.5).astype(np.float32))
    losses = []
    for step in range(3):
        emb = model.image_encoder(lib.stack([model.preprocess(batch[0]["image"])]))
        sparse, dense = model.prompt_encoder(points=(batch[0]["point_coords"], batch[0]["point_labels"]),
                                             boxes=None, masks=None)
        masks, iou = model.mask_decoder(image_embeddings=emb, image_pe=model.prompt_encoder.get_dense_pe(),
                                        sparse_prompt_embeddings=sparse, dense_prompt_embeddings=dense,
                                        multimask_output=True)
        loss = (lib.nn.functional.binary_cross_entropy_with_logits(masks, target)
                + lib.nn.functional.mse_loss(iou, lib.full_like(iou, 0.5)))
        opt.zero_grad()
        loss.backward()
        if step == 0:
            out["masks"], out["iou"] = _np(masks), _np(iou)
            out["grads"] = {k: _np(p.grad) for k, p in model.named_parameters() if p.grad is not None}
        opt.step()
        losses.append(loss.item())
    out["losses"] = losses
    # the end-to-end forward (no_grad) after training: relative positions are nonzero now
    results = model(batch, multimask_output=False)
    for i, r in enumerate(results):
        out[f"masks{i}"] = r["masks"].numpy()
        out[f"low_res{i}"] = _np(r["low_res_logits"])
        out[f"iou{i}"] = _np(r["iou_predictions"])
        out[f"logits{i}"] = _np(model.postprocess_masks(r["low_res_logits"], batch[i]["image"].shape[-2:],
                                                        batch[i]["original_size"]))
    out["requires_grad"] = results[0]["low_res_logits"].requires_grad
    rel = lib.tensor(np.random.default_rng(2).standard_normal((7, 4)).astype(np.float32))
    out["rel_pos"] = _np(pkg.image_encoder.get_rel_pos(4, 8, rel))  # interpolated 7 -> 15
    return out


def test_segment_anything_like_torch():
    """segment_anything/modeling (image encoder ViT with windows, padding and decomposed
    relative positions; prompt encoder with points, boxes and masks; two-way transformer;
    mask decoder) built as ``build_sam`` does at tiny sizes from ``manual_seed(0)``: the
    same ``print(model)``, state dict and initial weights (bitwise: the random Fourier
    ``positional_encoding_gaussian_matrix`` buffer too); a fine-tuning step's masks, IoU
    predictions and gradients (to 1e-5 of the largest entry), 3 Adam losses 1e-5; then
    ``Sam.forward`` (``@torch.no_grad``) on two images (one with point prompts and its
    padding point, one with a box and a mask input), after Adam moved the zero-initialized
    relative positions: the low-resolution logits, IoU and bilinear ``postprocess_masks``
    logits 1e-5 (values ~0.02, 5e-8 apart), the thresholded masks (95% and 19% True) equal
    but where a logit is within 1e-7 of 0 (none here); ``get_rel_pos``'s
    ``F.interpolate(mode="linear")`` path 1e-6."""
    th, sf = _sam_run(_load_sam(False), torch), _sam_run(_load_sam(True), shardflow)
    assert sf["repr"] == th["repr"]
    assert list(sf["state"]) == list(th["state"])
    for k, v in th["state"].items():
        np.testing.assert_array_equal(sf["state"][k], v, err_msg=f"initial {k}")
    assert_close(sf["masks"], th["masks"], "masks", 1e-5, 1e-5)
    assert_close(sf["iou"], th["iou"], "iou", 1e-5, 1e-6)
    assert list(sf["grads"]) == list(th["grads"])
    largest = max(np.abs(v).max() for v in th["grads"].values())
    for k, v in th["grads"].items():
        assert_close(sf["grads"][k], v, f"grad {k}", 1e-4, 1e-5 * largest)
    assert_close(sf["losses"], th["losses"], "losses", 1e-5, 1e-6)
    assert sf["requires_grad"] is th["requires_grad"] is False
    for i in (0, 1):
        assert_close(sf[f"low_res{i}"], th[f"low_res{i}"], f"low_res{i}", 1e-5, 1e-7)
        assert_close(sf[f"iou{i}"], th[f"iou{i}"], f"iou{i}", 1e-5, 1e-7)
        assert_close(sf[f"logits{i}"], th[f"logits{i}"], f"logits{i}", 1e-5, 1e-7)
        assert sf[f"masks{i}"].dtype == th[f"masks{i}"].dtype == np.bool_
        assert sf[f"masks{i}"].shape == th[f"masks{i}"].shape
        near_zero = np.abs(th[f"logits{i}"]) < 1e-7
        np.testing.assert_array_equal(sf[f"masks{i}"][~near_zero], th[f"masks{i}"][~near_zero])
    assert_close(sf["rel_pos"], th["rel_pos"], "rel_pos", 1e-6, 1e-6)


def _box_area(boxes):
    """torchvision.ops.boxes.box_area (not installed): ``(x1 - x0) * (y1 - y0)``."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _detr_matcher(monkeypatch, use_sf):
    """util/box_ops.py (torchvision's ``box_area`` from a stand-in module) and
    models/matcher.py (``from util.box_ops import ...`` finds it)."""
    boxes_mod = types.ModuleType("torchvision.ops.boxes")
    boxes_mod.box_area = _box_area
    for name in ("torchvision", "torchvision.ops"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "torchvision.ops.boxes", boxes_mod)
    tag = "sf" if use_sf else "th"
    box_ops = load_torch_file(HERE / "detr" / "util" / "box_ops.py", use_shardflow=use_sf, name=f"detr_box_ops_{tag}")
    monkeypatch.setitem(sys.modules, "util", types.ModuleType("util"))
    monkeypatch.setitem(sys.modules, "util.box_ops", box_ops)
    matcher = load_torch_file(HERE / "detr" / "matcher.py", use_shardflow=use_sf, name=f"detr_matcher_{tag}")
    return box_ops, matcher


def test_detr_hungarian_matcher_like_torch(monkeypatch):
    """detr models/matcher.py with util/box_ops.py: the HungarianMatcher (``@torch.no_grad``,
    softmax class cost indexed by the concatenated target ids, ``cdist(p=1)``, GIoU,
    ``C.view(...).cpu().split(sizes, -1)`` and scipy's ``linear_sum_assignment`` on each
    piece, which reads the tensor through ``__array__``) on DETR-shaped outputs (2 images x
    7 queries x 6 classes; 3 and 2 target boxes): the same assignments, as int64 tensors;
    ``generalized_box_iou`` / ``box_iou`` / the format round trip 1e-6; ``masks_to_boxes``
    equal, with torch's ``meshgrid`` indexing UserWarning (torch gives it once per process)."""
    g = np.random.default_rng(0)
    logits = g.standard_normal((2, 7, 6)).astype(np.float32)
    centers = g.uniform(0.3, 0.7, (2, 7, 2)).astype(np.float32)
    sizes = g.uniform(0.1, 0.4, (2, 7, 2)).astype(np.float32)
    targets = [(np.array([1, 4, 0]), g.uniform(0.2, 0.6, (3, 4)).astype(np.float32)),
               (np.array([5, 2]), g.uniform(0.2, 0.6, (2, 4)).astype(np.float32))]
    masks = g.uniform(size=(3, 9, 11)) > 0.6
    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        box_ops, matcher = _detr_matcher(monkeypatch, use_sf)
        outputs = {"pred_logits": lib.tensor(logits),
                   "pred_boxes": lib.cat([lib.tensor(centers), lib.tensor(sizes)], -1)}
        tgts = [{"labels": lib.tensor(lab), "boxes": lib.tensor(b)} for lab, b in targets]
        indices = matcher.HungarianMatcher(cost_class=1, cost_bbox=5, cost_giou=2)(outputs, tgts)
        xyxy = box_ops.box_cxcywh_to_xyxy(outputs["pred_boxes"][0])
        t_xyxy = box_ops.box_cxcywh_to_xyxy(tgts[0]["boxes"])
        if use_sf:  # shardflow's once-per-process warnings as in a fresh process
            from shardflow.backend import user_warning

            monkeypatch.setattr(user_warning, "_given", set())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m2b = box_ops.masks_to_boxes(lib.tensor(masks.astype(np.float32)))
        if use_sf:  # (torch warns once per process: only if nothing called it before)
            assert any("indexing argument" in str(w.message) for w in caught)
        runs.append({
            "indices": [(i.tolist(), j.tolist(), str(i.dtype).split(".")[-1]) for i, j in indices],
            "giou": _np(box_ops.generalized_box_iou(xyxy, t_xyxy)),
            "iou": _np(box_ops.box_iou(xyxy, t_xyxy)[0]),
            "round_trip": _np(box_ops.box_xyxy_to_cxcywh(xyxy)),
            "masks_to_boxes": _np(m2b),
        })
    th, sf = runs
    assert sf["indices"] == th["indices"]
    assert [len(i) for i, _, _ in th["indices"]] == [3, 2] and th["indices"][0][2] == "int64"
    for key in ("giou", "iou", "round_trip"):
        assert_close(sf[key], th[key], key, 1e-6, 1e-7)
    np.testing.assert_array_equal(sf["masks_to_boxes"], th["masks_to_boxes"])
