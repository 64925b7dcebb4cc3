"""Public PyTorch programs, session 40 (compat-llm): the 2025-era LLM stack
(``programs/llm_s40``): karpathy/nanochat's GPT, Muon and KV-cache engine, modded-nanogpt's
model and optimizers, a Mixtral-style sparse MoE block in Meta's Llama 3 model with top-p /
top-k sampling, and RWKV's time mixing; each run as a script on torch and, with its imports
rewritten, on shardflow, from the same ``manual_seed`` / ``np.random.seed`` (shardflow draws
torch's numbers), compared on every printed line and warning. See docs/COMPAT.md, "Public
programs" and "Session 40 (compat-llm)".

Tolerances. Most lines agree to 1e-5. Where a program trains with Muon (Newton-Schulz in
bfloat16) or Adam on parameters whose first gradients are zero (zero-initialised
projections), a one-ulp float32 difference in a gradient (a reduction summed in another
order) flips bfloat16 roundings or an Adam sign, and the run moves by more than rounding
accumulates. Those lines get torch's own spread, measured by rerunning the torch program
with every gradient perturbed by one float32 ulp before each optimizer step
(``scripts/grad_perturbation_spread.py``, 3 seeds; the figures are in each test's
docstring)."""

import re
import warnings

import numpy as np
import pytest

from shardflow.backend import user_warning
from shardflow.backend.fp_errors import FP_MESSAGE

from .programs._harness import HERE, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

LLM = "llm_s40"


def _run(tmp_path, monkeypatch, capsys, path, argv=(), seed=0):
    """Each framework after ``manual_seed(seed)`` and ``np.random.seed(seed)`` in its own
    directory, every warning recorded (as ``test_public_programs_more_ai._run``)."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir(parents=True)
        monkeypatch.chdir(where)
        lib.manual_seed(seed)
        np.random.seed(seed)
        if use_sf:
            monkeypatch.setattr(user_warning, "_given", set())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", message=FP_MESSAGE, category=RuntimeWarning, module=r"shardflow(\.|$)")
            run_script(HERE / path, use_sf, argv=argv)
        messages = [re.sub(r" \(Triggered internally at [^)]*\)$", "", f"{w.category.__name__}: {w.message}")
                    for w in caught]
        runs.append((capsys.readouterr().out.splitlines(), messages))
    return runs


def _as_shardflow(message):
    """torch's warning as shardflow words it: its own module names, and no ``torch.export``
    (shardflow has none) in the deprecations of ``torch.jit``."""
    return message.replace(" or `torch.export`", "").replace("torch.", "shardflow.")


def _same_run(tmp_path, monkeypatch, capsys, name, argv=(), lines=None, loose=()):
    """Run ``programs/llm_s40/<name>.py`` on both; warnings agree, torch printed ``lines``
    lines, and every line agrees to 1e-5 but those starting with a prefix in ``loose``
    (``{prefix: dict(rtol=..., atol=...)}``), held to that tolerance. Returns torch's lines."""
    (th_out, th_warned), (sf_out, sf_warned) = _run(tmp_path, monkeypatch, capsys, f"{LLM}/{name}.py", argv=argv)
    assert sf_warned == [_as_shardflow(m) for m in th_warned]
    if lines is not None:
        assert len(th_out) == lines, "\n".join(th_out)
    assert len(sf_out) == len(th_out), "\n".join(sf_out)
    loose = dict(loose)
    for i, (sf_line, th_line) in enumerate(zip(sf_out, th_out, strict=True)):
        tolerance = next((tol for prefix, tol in loose.items() if th_line.startswith(prefix)), {})
        same_printout([sf_line], [th_line], what=f"{name} line {i}", **tolerance)
    return th_out


def test_nanochat_gpt_muon_engine_like_torch(tmp_path, monkeypatch, capsys):
    """karpathy/nanochat: the GPT built on the meta device, ``to_empty`` and
    ``init_weights`` (bfloat16 rotary ``cos``/``sin`` buffers from ``torch.outer``), QK norm
    and pre-norm by ``F.rms_norm``, relu^2, ``scaled_dot_product_attention(enable_gqa=True)``
    (4 query heads on 2 key/value heads), the tanh logit softcap, ``setup_optimizers``
    (AdamW ``fused=True`` for the embedding and head, Muon for the blocks: Newton-Schulz in
    bfloat16 with ``mT``, momentum by ``lerp_``), 6 steps of 2 micro-batches with
    ``clip_grad_norm_``, the lr multiplier and Muon momentum warm-up, ``ignore_index=-1``;
    per-token losses (``loss_reduction='none'``); the KV cache grown by ``torch.cat``, filled
    in two chunks (the boolean prefix + ``tril`` mask path) against the full forward under
    ``inference_mode``; ``GPT.generate`` (greedy, ``topk`` + ``multinomial`` with a seeded
    ``torch.Generator``) and ``Engine.generate`` (prefill expanded to 3 rows, top-k and plain
    sampling). shardflow's bfloat16 ``norm`` summed squares in bfloat16 (34% low: every
    Muon step orthogonalised another matrix; fixed, ``tests/ops/test_half_norm_loss_accumulation.py``).
    Tolerance of the training lines: torch's own spread under one-ulp gradient
    perturbations reaches 6.4e-5 of a loss (shardflow: 1.4e-5), 6.3e-4 in a weight (4.5e-4)
    and 1.6e-3 in a per-token loss (1.2e-3); the generated tokens agree exactly."""
    loose = {"step ": dict(rtol=1.5e-4), "c_q row": dict(atol=1.5e-3), "muon buf": dict(atol=2e-5),
             "per-token": dict(atol=3e-3)}
    th_out = _same_run(tmp_path, monkeypatch, capsys, "nanochat", lines=42, loose=loose)
    assert sum(line.startswith("step ") for line in th_out) == 6
    assert th_out[-3].endswith("True")  # Engine's greedy tokens == GPT.generate's


def test_modded_nanogpt_model_like_torch(tmp_path, monkeypatch, capsys):
    """KellerJordan/modded-nanogpt's January 2025 model: ``CastedLinear`` with its own
    ``reset_parameters``, the merged 3-D ``qkv_w`` (Muon orthogonalises the batch through
    ``mT``), half-truncated RoPE in ``nn.Buffer``s, value embeddings mixed by 0-d ``lambdas``,
    the U-net ``skip_weights``, document + sliding-window masks, relu^2, the
    ``30 * sigmoid`` softcap, ``reduction='sum'``; embeddings cast to bfloat16 so the trunk
    runs in bfloat16 (a 0-d float32 parameter times a bfloat16 activation: shardflow summed
    that gradient in bfloat16 and gave 0.0 for torch's 0.00185; fixed,
    ``tests/ops/test_half_broadcast_grad_sum.py``), and again with a float32 trunk. Every
    projection starts at zero, so Adam steps the scalars on gradients that are rounding noise
    at first: under one-ulp gradient perturbations torch's own losses move by 1.3e-4 of
    their value, the scalars by up to 0.09 and ``qkv_w`` by 9e-3 (bounded by Adam's and
    Muon's step sizes); the first lines and the shapes and dtypes agree exactly."""
    loose = {"step:": dict(rtol=2.5e-4), "lambdas": dict(atol=0.15), "skip": dict(atol=0.15),
             "qkv": dict(atol=1.5e-2), "val_loss": dict(rtol=5e-4)}
    for argv in ((), ("--fp32-trunk",)):
        th_out = _same_run(tmp_path / (argv[0][2:] if argv else "bf16"), monkeypatch, capsys, "modded_nanogpt",
                           argv=argv, lines=14, loose=loose)
        assert th_out[0].startswith("embed torch.bfloat16" if not argv else "embed torch.float32")


def test_llama3_model_generation_and_mixtral_moe_like_torch(tmp_path, monkeypatch, capsys):
    """meta-llama/llama3's ``model.py`` and ``generation.py`` (``torch.polar`` rotary
    frequencies, ``view_as_complex`` / ``view_as_real``, ``repeat_kv``, the in-place KV cache,
    the ``triu(full(-inf), diagonal=1)`` mask ``hstack``ed behind the cache, ``forward`` under
    ``inference_mode``; greedy generation with per-token log-probabilities from
    ``-cross_entropy(logits.transpose(1, 2), reduction="none", ignore_index=-1)`` and
    ``sample_top_p``), a cached prefill + decode equal to the full forward; transformers'
    ``MixtralSparseMoeBlock`` (``topk`` routing, ``one_hot(...).permute``, ``nonzero`` hit
    experts indexing a ``ModuleList`` by a tensor, ``torch.where``, ``index_add_``) with
    ``load_balancing_loss_func``, 5 Adam steps, then as Llama's feed-forward (a Mixtral) in
    generation; ``TopKLogitsWarper`` + ``TopPLogitsWarper`` and ``multinomial``. Every line
    agrees (no fix was needed)."""
    th_out = _same_run(tmp_path, monkeypatch, capsys, "llama3_moe", lines=19)
    assert th_out[3] == "cached == full True True"
    assert sum(line.startswith("moe step") for line in th_out) == 5


def test_rwkv_in_150_lines_like_torch(tmp_path, monkeypatch, capsys):
    """BlinkDL's RWKV_in_150_lines: a ``torch.jit.ScriptModule`` with ``script_method``s
    (torch's DeprecationWarning at each: shardflow gave none; fixed,
    ``tests/jit/test_script_method_warning.py``), weights through ``torch.save`` /
    ``torch.load`` into ``SimpleNamespace``s, ``state == None``, the WKV recurrence with
    ``torch.maximum`` / ``torch.exp`` and in-place state rows, NumPy top-p sampling with
    ``np.random.choice`` over ``.numpy()`` probabilities; added: the same recurrence over a
    sequence under autograd, equal to the RNN, and 4 Adam steps through it. Every line and
    warning agrees."""
    th_out = _same_run(tmp_path, monkeypatch, capsys, "rwkv", lines=18)
    assert th_out[-5] == "sequence == rnn True"


def test_nanochat_muonadamw_optimizer_like_torch(tmp_path, monkeypatch, capsys):
    """nanochat's 2026 ``optim.py``: ``MuonAdamW`` with ``adamw_step_fused`` (float32
    arithmetic for a bfloat16 embedding, 0-D CPU tensors filled by ``fill_``, ``lerp_`` by a
    0-D tensor, ``beta ** step`` of 0-D tensors, ``add_(alpha=-step_size)`` with a 0-D tensor
    alpha, ``copy_`` back) and ``muon_step_fused`` (``torch.stack`` of same-shape parameters,
    MuonEq, Polar Express in bfloat16 for tall and wide matrices, Muon+, NorMuon's factored
    second moment, cautious weight decay, ``torch._foreach_copy_`` over ``unbind(0)``); 5
    steps. Every name was there and no fix was needed. Tolerances from torch's own spread
    (``scripts/grad_perturbation_spread.py``, 3 seeds): losses 6.2e-5 (shardflow 3.3e-5), a
    weight 8.9e-4 (9.4e-4), the second moment 2.2e-5 (9e-6)."""
    loose = {"step ": dict(rtol=1e-4), "fc ": dict(atol=1.5e-3), "buffers": dict(atol=3e-5)}
    th_out = _same_run(tmp_path, monkeypatch, capsys, "nanochat_muonadamw", lines=10, loose=loose)
    assert th_out[-1] == "adam step 5 5.0"
