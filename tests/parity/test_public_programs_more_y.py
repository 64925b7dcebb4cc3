"""Tutorial-series programs people copy, re-implemented in our own words on tiny synthetic
data (each file's header names the public program and what it keeps), run as scripts on
torch and, with only their imports changed, on shardflow, each from its own seeds (no
weight copying, no shared draws: shardflow draws torch's numbers for ``nn.init.uniform_`` /
``normal_`` / ``xavier_uniform_`` / ``orthogonal_`` / ``kaiming_normal_``, dropout masks and
the shuffled ``DataLoader``; teacher forcing is Python's ``random``, seeded by the program):

* bentrevett/pytorch-seq2seq 1-6 (``programs/bentrevett_seq2seq/``): LSTM encoder-decoder,
  GRU with a context vector, Bahdanau attention, packed padded sequences with masking
  (``enforce_sorted=False``), convolutional seq2seq (GLU, scaled residuals), a Transformer
  from scratch (``torch.triu`` mask, ``register_buffer``);
* bentrevett/pytorch-sentiment-analysis NBoW, bidirectional packed LSTM and CNN
  (``programs/bentrevett_sentiment/sentiment.py``), and its earlier notebooks' LSTM, FastText
  and Conv2d CNN with ``BCEWithLogitsLoss`` (``sentiment_legacy.py``);
* Grad-CAM (jacobgil/pytorch-grad-cam's core) and vanilla / guided backprop / integrated
  gradients (utkuozbulak/pytorch-cnn-visualizations) with forward hooks, tensor hooks,
  full backward hooks returning a new ``grad_input``, ``torch.autograd.grad``
  (``programs/interpretability_hooks.py``).

Compared: every printed line (``print(model)``, parameter counts, the losses printed with 6
decimals, perplexities, translations, attention rows, predictions), each training step's
loss, and the final weights (or, for the hooks program, the attribution maps).

Tolerance: losses rtol 1e-5 (a 6-decimal print may differ by one unit in the last
decimal: measured, seq2seq 4 and 6 do, by 1e-6), weights rtol 1e-5 / atol 1e-5 (a few ulps
of float32 rounding carried through Adam's division by each gradient's running size), the
attribution maps rtol 1e-5 / atol 1e-7.
"""

from pathlib import Path

import numpy as np
import pytest

from .programs._harness import assert_close, assert_same_state, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

HERE = Path(__file__).parent / "programs"


def _run_both(path, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    runs = []
    for use_sf in (False, True):
        mod = run_script(path, use_sf)
        runs.append((mod, capsys.readouterr().out.splitlines()))
    return runs


def _key_bias(key, value):
    """``rounding_only`` for :func:`assert_same_state`: the hand-made Transformer's key
    projection bias (``fc_k.bias``) has a zero gradient in exact arithmetic (it shifts all
    scores of a query alike, which softmax ignores), so Adam steps it by about +-lr on the
    sign of rounding noise in both frameworks: bounded by lr x steps (5e-4 x 8; measured:
    up to 2.7e-4 apart)."""
    if not key.endswith("fc_k.bias"):
        return None
    return 5e-4 * 8, np.ones(value.shape, bool)


SEQ2SEQ = ["s1_lstm", "s2_gru", "s3_attention", "s4_packed", "s5_conv", "s6_transformer"]


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_bentrevett_seq2seq_like_torch(name, capsys, monkeypatch, tmp_path):
    """Each tutorial's printout, its 8 training losses and its final weights are torch's
    (dropout on: the masks are torch's)."""
    (th, th_out), (sf, sf_out) = _run_both(HERE / "bentrevett_seq2seq" / f"{name}.py", capsys, monkeypatch,
                                           tmp_path)
    assert any(line.startswith("Epoch: 02") for line in th_out), th_out
    same_printout(sf_out, th_out, rtol=1e-5, atol=2e-6, what=name)
    assert len(th.losses) == 8
    assert_close(sf.losses, th.losses, f"{name} losses", rtol=1e-5, atol=0)
    assert_same_state(sf.model, th.model, name, rtol=1e-5, atol=1e-5, rounding_only=_key_bias)


def test_bentrevett_sentiment_like_torch(capsys, monkeypatch, tmp_path):
    """NBoW, the bidirectional packed LSTM (dropout 0.5 between its layers: torch draws that
    mask over the packed rows, which shardflow did not; see tests/nn/test_rnn_packed_dropout.py)
    and the CNN: printout (losses, accuracies, predictions, ``print(model)``), epoch losses and
    the weights reloaded from each best ``state_dict`` file."""
    (th, th_out), (sf, sf_out) = _run_both(HERE / "bentrevett_sentiment" / "sentiment.py", capsys, monkeypatch,
                                           tmp_path)
    assert sum(line.startswith("test_loss") for line in th_out) == 3, th_out
    same_printout(sf_out, th_out, rtol=1e-5, atol=2e-6, what="sentiment")
    assert sorted(th.metrics) == sorted(sf.metrics)
    for key, values in th.metrics.items():
        assert_close(sf.metrics[key], values, f"sentiment {key}", rtol=1e-5, atol=0)
    for name in ("nbow", "lstm", "cnn"):
        assert_same_state(sf.models[name], th.models[name], name, rtol=1e-5, atol=1e-5)


def test_bentrevett_sentiment_legacy_like_torch(capsys, monkeypatch, tmp_path):
    """The earlier notebooks' packed bidirectional LSTM, FastText over bigrams (``avg_pool2d``
    over the sequence) and Conv2d CNN (``max_pool1d`` over ``conv.shape[2]``) with
    ``BCEWithLogitsLoss`` and vectors copied into the embedding: printout, epoch losses and
    weights as torch's (dropout on)."""
    (th, th_out), (sf, sf_out) = _run_both(HERE / "bentrevett_sentiment" / "sentiment_legacy.py", capsys,
                                           monkeypatch, tmp_path)
    assert sum(line.startswith("Epoch: 02") for line in th_out) == 3, th_out
    same_printout(sf_out, th_out, rtol=1e-5, atol=2e-6, what="sentiment legacy")
    assert_close(sf.history, th.history, "sentiment legacy losses", rtol=1e-5, atol=0)
    for name in ("rnn", "fasttext", "cnn"):
        assert_same_state(sf.models[name][0], th.models[name][0], name, rtol=1e-5, atol=1e-5)


def test_interpretability_hooks_like_torch(capsys, monkeypatch, tmp_path):
    """Grad-CAM (forward hook + tensor hook), vanilla backprop (full backward hook on the
    first layer), guided backprop (full backward hooks on the ReLUs returning a new
    grad_input), integrated gradients and input x gradient (``torch.autograd.grad``): every
    map is torch's, and every hook is gone after ``.remove()``."""
    (th, th_out), (sf, sf_out) = _run_both(HERE / "interpretability_hooks.py", capsys, monkeypatch, tmp_path)
    assert "hooks left after release: 0" in th_out
    same_printout(sf_out, th_out, rtol=1e-5, atol=1e-6, what="interpretability")
    for name in ("grayscale_cam", "batched_cam", "vanilla_grads", "guided_grads", "integrated_grads"):
        assert_close(getattr(sf, name), getattr(th, name), name, rtol=1e-5, atol=1e-7)
    assert_close(sf.attribution.detach().numpy(), th.attribution.detach().numpy(), "attribution", 1e-5, 1e-7)
    assert not np.allclose(th.guided_grads, th.vanilla_grads)  # the ReLU hooks changed the gradient
    for m in sf.model.modules():
        assert not m._forward_hooks and not m._backward_hooks, m
