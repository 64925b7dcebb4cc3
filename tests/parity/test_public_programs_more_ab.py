"""Generative models and a chatbot people copy, run as scripts on torch and, with their
imports rewritten, on shardflow, from the same ``manual_seed`` (no weight copying, no shared
draws: shardflow draws torch's numbers, docs/COMPAT.md "Random seeds"), compared on every
printed line and on the trained and saved states (docs/COMPAT.md, "Public programs").

* ``programs/generative_ab/ddpm.py``: dome272/Diffusion-Models-pytorch's DDPM (linear beta
  schedule, ``noise_images``, a small UNet with GroupNorm/GELU ``DoubleConv``, bilinear
  ``Upsample``, ``MultiheadAttention`` self-attention, sinusoidal time embedding), EMA via
  ``copy.deepcopy(model).eval().requires_grad_(False)``, the ``no_grad`` sampling loop and
  the uint8 images.
* ``programs/generative_ab/vaes.py``: AntixK/PyTorch-VAE's VanillaVAE, BetaVAE (capacity
  loss), ConditionalVAE (one-hot labels as an extra channel) and VQ-VAE (``argmin``,
  ``scatter_`` one-hot, straight-through estimator), with their ``loss_function`` dicts,
  ``generate`` and ``sample``.
* ``programs/generative_ab/chatbot.py``: pytorch/tutorials' chatbot tutorial (packed
  bidirectional GRU encoder, Luong attention dot/general/concat, teacher forcing with
  ``random.random()``, ``maskNLLLoss``, clipping, checkpoint dicts, greedy search), with
  dropout 0.1 in training mode on both sides (shardflow draws torch's masks).

Tolerance: printed losses have 6 decimals and agree to the last digit +-1 (float32 rounding
in a different summation order). States: rtol 1e-4, atol 1e-5, except parts whose gradient
is zero in exact arithmetic, which Adam moves by about +-lr per step on the sign of rounding
noise and which are therefore only bounded by 2 x steps x lr (each run's own noise moves
it by up to about lr per step, in either direction): the key part of
``MultiheadAttention``'s ``in_proj_bias`` (DDPM) and, in the VAEs, each conv / transposed-conv
bias that feeds a training-mode BatchNorm (and, through it, that BatchNorm's
``running_mean``; measured 2.6e-2 at most on these draws, bound 2 x 4 x 0.005).
Because those running means differ, the VAEs' eval-mode ``generate``/``sample`` lines are
compared by loading torch's trained state into the shardflow model and running both from
the same seed (1e-5), not from the two runs' own states.
"""

import re
import warnings

import numpy as np
import pytest
import torch

import shardflow

from .programs._harness import HERE, assert_close, assert_same_state, attention_key_bias, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

PROGRAMS = HERE / "generative_ab"


def _run_both(tmp_path, monkeypatch, capsys, name):
    """``[(module, printed lines, warnings, folder)]`` for torch then shardflow."""
    runs = []
    for use_sf in (False, True):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir()
        monkeypatch.chdir(where)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = run_script(PROGRAMS / f"{name}.py", use_sf)
        runs.append((module, capsys.readouterr().out.splitlines(),
                     [(w.category, str(w.message)) for w in caught], where))
    assert runs[1][2] == runs[0][2], (runs[1][2], runs[0][2])
    return runs


def _key_bias(key, value):
    """The key third of each ``in_proj_bias`` (the UNet's attentions have 16 and 8
    channels), bounded by 2 x 4 AdamW steps of lr 3e-4 (see the module docstring)."""
    if not key.endswith("in_proj_bias"):
        return None
    return attention_key_bias(value.shape[0] // 3, 2 * 4 * 3e-4)(key, value)


def _general_attn_bias(key, value):
    """Luong ``general`` attention: ``Linear``'s bias adds ``hidden . b`` to every
    encoder position's score alike, which the softmax ignores: a zero gradient, bounded by
    2 x 4 Adam steps of the decoder's lr 0.025."""
    if key != "attn.attn.bias" or value.shape[0] != 8:
        return None
    return 2 * 4 * 0.025, np.ones(value.shape, bool)


def test_dome272_ddpm_trains_and_samples_like_torch(tmp_path, monkeypatch, capsys):
    """Per step: the ``torch.randint`` timesteps, the MSE of the predicted noise (noise from
    ``randn_like``); after training, the sampled uint8 images of the model and of its EMA
    copy (the sampling loop's ``randn``/``randn_like`` are torch's draws); the trained model,
    the EMA model and the three saved state dicts."""
    (th, th_out, _, th_dir), (sf, sf_out, _, sf_dir) = _run_both(tmp_path, monkeypatch, capsys, "ddpm")
    assert th_out[0] == "params: 55507" and th_out[2].startswith("epoch 0 step 0 t=[")
    assert th_out[-2] == "torch.uint8 torch.Size([2, 3, 8, 8]) " + th_out[-2].split()[-1]
    # the uint8 images: (x * 255).type(uint8) truncates; a value within rounding of an
    # integer may land one apart, so the images are held to 1 and their mean to 1/384
    same_printout(sf_out[:-2], th_out[:-2], rtol=1e-5, atol=1.1e-6, what="ddpm")
    same_printout(sf_out[-2:], th_out[-2:], rtol=0, atol=1, what="ddpm images")
    assert sf.sampled.dtype == shardflow.uint8
    assert_close(sf.sampled.numpy(), th.sampled.numpy(), "sampled images", rtol=0, atol=1)
    for attr in ("model", "ema_model"):
        assert_same_state(getattr(sf, attr), getattr(th, attr), attr, rounding_only=_key_bias)
    assert not any(p.requires_grad for p in sf.ema_model.parameters())
    assert sf.ema_model.training is th.ema_model.training is True  # sample() ends with model.train()
    for file in ("ckpt.pt", "ema_ckpt.pt"):
        th_saved, sf_saved = torch.load(th_dir / file), shardflow.load(sf_dir / file)
        assert list(sf_saved) == list(th_saved), file
    th_opt, sf_opt = torch.load(th_dir / "optim.pt"), shardflow.load(sf_dir / "optim.pt")
    assert sf_opt["param_groups"] == th_opt["param_groups"]
    assert sorted(sf_opt["state"]) == sorted(th_opt["state"])


_BEFORE_BN = re.compile(r"^(encoder\.\d+\.0\.bias|decoder\.\d+\.0\.bias|final_layer\.0\.bias|"
                        r"encoder\.\d+\.1\.running_mean|decoder\.\d+\.1\.running_mean|final_layer\.1\.running_mean)$")


def _bias_before_batchnorm(key, value):
    if not _BEFORE_BN.match(key):
        return None
    return 2 * 4 * 0.005, np.ones(value.shape, bool)


def test_antixk_vaes_train_like_torch(tmp_path, monkeypatch, capsys):
    """Every training step's ``loss_function`` dict (``.item()`` of each entry) of the four
    models; VQ-VAE's eval reconstruction and its ``sample`` Warning; state-dict keys; the
    trained states (see the module docstring for the zero-gradient biases); then, from
    torch's trained weights in both, ``generate`` and ``sample`` in eval mode."""
    (th, th_out, _, _), (sf, sf_out, _, _) = _run_both(tmp_path, monkeypatch, capsys, "vaes")
    assert th_out[0].startswith("VanillaVAE epoch 0 step 0 {'loss': ")
    assert "sample: VQVAE sampler is not implemented." in th_out
    eval_lines = [i for i, line in enumerate(th_out) if " recons " in line or " samples " in line]
    assert len(eval_lines) == 7, eval_lines
    keep = [i for i in range(len(th_out)) if i not in eval_lines or th_out[i].startswith("VQVAE")]
    same_printout([sf_out[i] for i in keep], [th_out[i] for i in keep], rtol=1e-5, atol=1.1e-6, what="vaes")
    for name, th_model in th.models.items():
        sf_model = sf.models[name]
        assert_same_state(sf_model, th_model, name, rounding_only=_bias_before_batchnorm)
        if name == "VQVAE":
            continue
        sf_model.load_state_dict({k: shardflow.tensor(v.numpy()) for k, v in th_model.state_dict().items()})
        imgs, classes = th.make_data()
        onehot = torch.nn.functional.one_hot(classes[:4], 2)
        outputs = []
        for lib, model in ((torch, th_model), (shardflow, sf_model)):
            model.eval()
            lib.manual_seed(9)
            with lib.no_grad():
                batch, labels = lib.tensor(imgs[:4].numpy()), lib.tensor(onehot.numpy())
                outputs.append([model.generate(batch, labels=labels).numpy(),
                                model.sample(4, "cpu", labels=labels).numpy()])
        assert_close(outputs[1][0], outputs[0][0], f"{name} generate", rtol=1e-5, atol=1e-6)
        assert_close(outputs[1][1], outputs[0][1], f"{name} sample", rtol=1e-5, atol=1e-6)


def test_chatbot_tutorial_trains_and_answers_like_torch(tmp_path, monkeypatch, capsys):
    """For each attention method (dot, general, concat): ``print(decoder)``, every step's
    teacher-forcing draw and masked NLL loss (a packed bidirectional 2-layer GRU with dropout
    in training mode: shardflow's mask over the packed rows is torch's), the averaged loss
    line, the checkpoint dict loaded back (iteration, loss, keys, the ``Voc`` dict), the greedy
    answers and their score tensors (``grad_fn`` in the repr); the padded batch, lengths and
    mask tensors; the final encoder and decoder states."""
    (th, th_out, _, th_dir), (sf, sf_out, _, sf_dir) = _run_both(tmp_path, monkeypatch, capsys, "chatbot")
    assert th_out[:2] == ["keep_words 15 / 15", "Counted words: 18"]
    assert sum(line.startswith("Bot:") for line in th_out) == 6
    assert any("grad_fn=<CatBackward0>" in line for line in th_out)
    same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-6, what="chatbot")
    for method, (th_enc, th_dec) in th.results.items():
        sf_enc, sf_dec = sf.results[method]
        assert_same_state(sf_enc, th_enc, f"{method} encoder")
        assert_same_state(sf_dec, th_dec, f"{method} decoder",
                          rounding_only=_general_attn_bias if method == "general" else None)
    path = "save/cb_concat/toy/2-2_8/4_checkpoint.tar"
    th_ck, sf_ck = torch.load(th_dir / path, weights_only=False), shardflow.load(sf_dir / path, weights_only=False)
    assert sorted(sf_ck) == sorted(th_ck) and sf_ck["voc_dict"] == th_ck["voc_dict"]
    assert list(sf_ck["de_opt"]["state"]) == list(th_ck["de_opt"]["state"])
