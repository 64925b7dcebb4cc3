"""Time-series and recommender programs people copy, run as scripts on torch and, with their
imports rewritten, on shardflow, from the same ``manual_seed`` / ``np.random.seed`` (no
weight copying, no shared draws: shardflow draws torch's numbers, docs/COMPAT.md "Random
seeds"), compared on every printed line and on the trained states (docs/COMPAT.md, "Public
programs").

* ``programs/series_ae/tcn.py``: locuslab/TCN's ``TemporalConvNet`` (``Chomp1d``, dilated
  ``Conv1d`` under the old ``nn.utils.weight_norm`` -- its ``weight.data.normal_`` init draws
  into the derived weight and is lost, as upstream -- and under
  ``nn.utils.parametrizations.weight_norm``, 1x1 ``downsample``), the adding problem with
  gradient clipping and an optimizer picked by name, a sequential classifier on permuted
  pixels with ``log_softmax`` + ``nll_loss``.
* ``programs/series_ae/ncf.py``: guoyang9/NCF's GMF, MLP and NeuMF-pre (embeddings copied
  from the two pre-trained models with ``weight.data.copy_``), negative sampling with
  ``np.random`` in a ``Dataset``, ``BCEWithLogitsLoss``, hit ratio / NDCG via ``torch.topk``
  and ``torch.take``.
* ``programs/series_ae/deepfm.py``: rixwew/pytorch-fm's FM and DeepFM (``EmbeddingBag(mode='sum')``
  first-order term fed flat indices and ``offsets``, per-field offsets added with
  ``x.new_tensor``, ``0.5 * (square_of_sum - sum_of_square)``, an MLP with BatchNorm1d and
  dropout on: torch's masks), ``BCELoss``, Adam; and its ``--sparse`` form (``sparse=True``
  embeddings, their sparse COO gradients stepped by ``SparseAdam``, the rest by ``Adam``).
* ``programs/series_ae/lstm_forecast.py``: an LSTM forecaster as people write them: sliding
  windows by ``torch.stack`` over ``range`` and by ``unfold``, ``nn.LSTM(batch_first=True)``
  with ``torch.zeros`` ``h0``/``c0`` and dropout between layers, ``TensorDataset`` +
  ``DataLoader(shuffle=True)``, ``ReduceLROnPlateau``, early stopping with
  ``copy.deepcopy(model.state_dict())``, MAPE / SMAPE.

Tolerance: printed numbers have 6 decimals and agree to +-1 in the last digit (float32
rounding in a different summation order); states rtol 1e-4, atol 1e-5. DeepFM's MLP puts
a ``Linear`` before each training-mode ``BatchNorm1d``: that bias has a zero gradient in exact
arithmetic, Adam turns each run's rounding noise into steps of about lr, so it (and the
running mean that follows it) is bounded by 2 x 8 steps x lr 0.01 only, and the eval-mode
lines that read the running means agree to rtol 1e-3 (measured 2e-4; torch itself moved its
last one by 1.5e-4 between runs in different thread settings).
"""

import re
import warnings

import numpy as np
import pytest
import torch

import shardflow

from .programs._harness import HERE, assert_same_state, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

PROGRAMS = HERE / "series_ae"


def _run_both(tmp_path, monkeypatch, capsys, name, argv=()):
    """``[(module, printed lines, warnings, folder)]`` for torch then shardflow."""
    runs = []
    for use_sf in (False, True):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir()
        monkeypatch.chdir(where)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = run_script(PROGRAMS / f"{name}.py", use_sf, argv=argv)
        runs.append((module, capsys.readouterr().out.splitlines(),
                     [(w.category, str(w.message)) for w in caught], where))
    assert runs[1][2] == runs[0][2], (runs[1][2], runs[0][2])
    return runs


def test_locuslab_tcn_trains_like_torch(tmp_path, monkeypatch, capsys):
    """``print(model)`` of both weight-norm flavours, the state-dict keys (``weight_g`` /
    ``weight_v`` under each alias the ``net`` Sequential gives the convs; ``parametrizations.
    weight.original0/1``), each step's clipped gradient norm and loss, the test losses, the
    sequential classifier's losses and correct counts; the deprecation FutureWarnings; the
    trained models."""
    (th, th_out, th_warn, _), (sf, sf_out, _, _) = _run_both(tmp_path, monkeypatch, capsys, "tcn")
    assert sum("weight_norm` is deprecated" in msg for _, msg in th_warn) == 4
    assert th_out[0] == "TCN(" and any(line.strip() == "(0): _WeightNorm()" for line in th_out)
    assert sum(line.startswith("Train Epoch:") for line in th_out) == 4
    assert sum(line.startswith("seq epoch") for line in th_out) == 4
    same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-6, what="tcn")
    assert_same_state(sf.adding_model, th.adding_model, "adding TCN")
    assert_same_state(sf.seq_model, th.seq_model, "sequential TCN")


def test_guoyang9_ncf_trains_and_ranks_like_torch(tmp_path, monkeypatch, capsys):
    """GMF, MLP and NeuMF-pre: every step's users (the shuffled loader) and loss, HR@3 and
    NDCG@3 after each epoch, ``print(model)``; NeuMF-pre starts from the pre-trained
    embeddings and towers (``weight.data.copy_`` of tensors that require grad writes into
    the parameter, as torch's) and from the best GMF checkpoint on disk."""
    (th, th_out, _, th_dir), (sf, sf_out, _, sf_dir) = _run_both(tmp_path, monkeypatch, capsys, "ncf")
    assert th_out[0] == "GMF 1441" and sum(line.startswith("HR: ") for line in th_out) == 6
    same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-6, what="ncf")
    assert_same_state(sf.neumf, th.neumf, "NeuMF-pre")
    for name in ("GMF", "MLP", "NeuMF-pre"):
        th_saved = torch.load(th_dir / "models" / f"{name}.pth")
        sf_saved = shardflow.load(sf_dir / "models" / f"{name}.pth")
        assert list(sf_saved) == list(th_saved), name


_BEFORE_BN = re.compile(r"^mlp\.mlp\.(0|4)\.bias$|^mlp\.mlp\.(1|5)\.running_mean$")


def _bias_before_batchnorm(key, value):
    if not _BEFORE_BN.match(key):
        return None
    return 2 * 8 * 0.01, np.ones(value.shape, bool)


@pytest.mark.parametrize("argv", [(), ("--sparse",)], ids=["dense", "sparse"])
def test_pytorch_fm_deepfm_trains_like_torch(tmp_path, monkeypatch, capsys, argv):
    """The ``randint`` click data, ``print`` of both models (``EmbeddingBag(13, 1,
    mode='sum')``), the gradient's layout, every step's loss (the ``randperm`` batches,
    dropout masks), the eval accuracy and mean prediction, the state-dict keys, a
    ``mode='mean'`` EmbeddingBag with offsets; the trained states. ``--sparse``: the
    embeddings ``sparse=True`` (sparse COO gradients, printed ``torch.sparse_coo``) stepped
    by ``SparseAdam``, the rest by ``Adam``."""
    (th, th_out, _, _), (sf, sf_out, _, _) = _run_both(tmp_path, monkeypatch, capsys, "deepfm", argv)
    if argv:
        assert any(" grad True torch.sparse_coo torch.Size([13, 4])" in line for line in th_out), th_out
    assert "    (fc): EmbeddingBag(13, 1, mode='sum')" in th_out
    assert sum(" loss " in line for line in th_out) == 16
    evals = [i for i, line in enumerate(th_out) if " acc " in line]
    assert len(evals) == 4
    rest = [i for i in range(len(th_out)) if i not in evals]
    same_printout([sf_out[i] for i in rest], [th_out[i] for i in rest], rtol=1e-5, atol=1.1e-6, what="deepfm")
    # eval lines read the running means behind the noise-stepped biases (module docstring):
    # 2e-4 apart in the dense run, 3.4e-3 in the sparse one (every embedding row to 6e-8)
    same_printout([sf_out[i] for i in evals], [th_out[i] for i in evals], rtol=1e-2 if argv else 1e-3,
                  atol=1.1e-6, what="deepfm eval")
    assert_same_state(sf.fm, th.fm, "FM")
    assert_same_state(sf.dfm, th.dfm, "DeepFM", rounding_only=_bias_before_batchnorm)


def test_lstm_forecaster_with_early_stopping_like_torch(tmp_path, monkeypatch, capsys):
    """The window shapes (``stack`` and ``unfold`` agree), ``print(model)``, each epoch's
    train / validation loss and the plateau-halved lr, the early stop, MAPE / SMAPE of the
    restored best model and its last forecast (a tensor repr); the best state kept by
    ``deepcopy`` equals the restored model's."""
    (th, th_out, _, _), (sf, sf_out, _, _) = _run_both(tmp_path, monkeypatch, capsys, "lstm_forecast")
    assert th_out[0] == "windows (69, 10, 1) (69, 2) (69, 12) True"
    assert any(line.startswith("early stopping at epoch") for line in th_out)
    assert th_out[-1].startswith("last forecast tensor([")
    same_printout(sf_out, th_out, rtol=1e-5, atol=1.1e-6, what="lstm forecast")
    assert_same_state(sf.model, th.model, "forecaster")
    for key, value in sf.best_state.items():
        assert not value.requires_grad and shardflow.equal(value, sf.model.state_dict()[key]), key
