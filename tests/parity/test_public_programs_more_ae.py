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

Tolerance: printed numbers have 6 decimals and agree to +-1 in the last digit (float32
rounding in a different summation order); states rtol 1e-4, atol 1e-5.
"""

import warnings

import pytest
import torch

import shardflow

from .programs._harness import HERE, assert_same_state, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

PROGRAMS = HERE / "series_ae"


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
