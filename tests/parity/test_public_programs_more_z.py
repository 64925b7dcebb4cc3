"""Transformer code in the styles people copy, run as scripts on torch and, with their imports
rewritten, on shardflow, from the program's own ``torch.manual_seed`` (no weight copying, no
shared draws: shardflow draws torch's numbers, docs/COMPAT.md "Random seeds"), compared on
every printed line (``same_printout``: text exactly, numbers to rtol 1e-5 / atol 1e-6).

The programs (``programs/transformers_z/``) are our own re-implementations of public code,
each naming what it is modelled on:

* ``hf_style_gpt2_llama.py``: HuggingFace transformers' modeling-file idioms (GPT-2 with
  ``Conv1D``/``addmm``, ``baddbmm`` scores, ``finfo.min`` masks, KV cache, ``output_attentions``,
  gradient checkpointing, tied embeddings, ``save``/``load`` of the state dict; a Llama with
  RMSNorm, ``torch.outer`` RoPE cache, GQA and SDPA; greedy and top-k/top-p sampling).
* ``annotated_transformer.py``: harvardnlp's Annotated Transformer, its copy task with
  ``LabelSmoothing``/``KLDivLoss``, ``LambdaLR(rate)`` and ``greedy_decode``; its
  label-smoothing example prints ``nan`` (``log(0)`` under a zero target), as torch does.
* ``d2l_chapters.py``: d2l.ai's chapters from linear regression to attention scoring
  (lazy layers, hand-written SGD/dropout/batch norm, LeNet/AlexNet-style nets, RNN from
  scratch with ``grad_clipping``, GRU/LSTM, ``masked_softmax``); its dropout masks and
  shuffles are torch's draws (``torch.rand`` masks, ``DataLoader(shuffle=True)``) and
  ``random.shuffle`` from ``random.seed(0)``.

Tolerance: losses over a few steps agree to rtol 1e-5; a printed ``.item()`` with all its
digits (``eval: 2.2503583431243896``) differs in the 7th digit (float32 rounding), inside it.
"""

import random

import pytest

from .programs._harness import HERE, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

PROGRAMS = HERE / "transformers_z"


def _printed(capsys, name, use_sf):
    random.seed(0)
    run_script(PROGRAMS / f"{name}.py", use_sf)
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("name", ["hf_style_gpt2_llama", "annotated_transformer", "d2l_chapters"])
def test_transformer_style_programs_like_torch(name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    th_lines = _printed(capsys, name, False)
    sf_lines = _printed(capsys, name, True)
    assert len(th_lines) > 20, th_lines
    same_printout(sf_lines, th_lines, what=name)
    if name == "annotated_transformer":  # the label-smoothing example's nan, as torch
        assert "[nan, nan, nan, nan, nan]" in sf_lines
    if name == "hf_style_gpt2_llama":
        assert "cache matches: True" in sf_lines and "reloaded equal: True" in sf_lines
