"""Public PyTorch programs, session 40 (compat-audio): speech, audio, OCR and sequence
programs (``programs/audio_s40``): CTC training (a CRNN for OCR, DeepSpeech2 with packed
bidirectional GRUs), the torchaudio tutorial's M5 keyword spotter (torchaudio's transforms
from ``programs/_torchaudio_standin.py``), STFT mask estimation with ``istft`` and
Griffin-Lim, a word LM with ``nn.AdaptiveLogSoftmaxWithLoss``, and pair scoring
(``PairwiseDistance``, ``CosineEmbeddingLoss``, ``nn.Bilinear``, ``torch.bucketize``). Each
runs as a script on torch and, with its imports rewritten, on shardflow, from the same
``manual_seed`` / ``np.random.seed`` (shardflow draws torch's numbers: docs/COMPAT.md
"Random seeds"), compared on every printed line and warning. See docs/COMPAT.md, "Public
programs" and "Session 40 (compat-audio)".
"""

import re
import warnings

import numpy as np
import pytest

from shardflow.backend import user_warning
from shardflow.backend.fp_errors import FP_MESSAGE

from .programs._harness import HERE, run_script
from .programs._torchaudio_standin import torchaudio_modules
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")

AUDIO = "audio_s40"


def _same_run(tmp_path, monkeypatch, capsys, name, lines, **tolerance):
    """Run ``programs/audio_s40/<name>.py`` on torch, then on shardflow (each after
    ``manual_seed(0)`` and ``np.random.seed(0)`` in its own directory, with the torchaudio
    stand-in over its own library, every warning recorded); the printouts and warnings
    agree and the torch run printed ``lines`` lines. Returns torch's printout and warnings."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir(parents=True)
        monkeypatch.chdir(where)
        lib.manual_seed(0)
        np.random.seed(0)
        if use_sf:  # once-per-process warnings as in a fresh process
            monkeypatch.setattr(user_warning, "_given", set())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", message=FP_MESSAGE, category=RuntimeWarning, module=r"shardflow(\.|$)")
            run_script(HERE / AUDIO / f"{name}.py", use_sf, modules=torchaudio_modules(lib))
        messages = [re.sub(r" \(Triggered internally at [^)]*\)$", "", f"{w.category.__name__}: {w.message}")
                    for w in caught]
        runs.append((capsys.readouterr().out.splitlines(), messages))
    (th_out, th_warned), (sf_out, sf_warned) = runs
    assert sf_warned == th_warned
    assert len(th_out) == lines, "\n".join(th_out)
    same_printout(sf_out, th_out, what=name, **tolerance)
    return th_out, th_warned


def test_crnn_ctc_ocr_like_torch(tmp_path, monkeypatch, capsys):
    """meijieru/crnn.pytorch: conv stack with asymmetric ``MaxPool2d((2, 2), (2, 1), (0, 1))``,
    ``squeeze(2).permute(2, 0, 1)``, two ``BidirectionalLSTM``s, ``F.log_softmax(2)``,
    ``strLabelConverter`` (concatenated ``IntTensor`` targets), ``nn.CTCLoss(blank=0,
    zero_infinity=True)`` with ``IntTensor`` lengths, Adadelta; greedy decoding by ``max(2)``
    and by ``argmax`` + ``unique_consecutive``; per-sample losses and an infeasible target
    (``inf``, zeroed with ``zero_infinity``). Every line agrees."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "crnn_ctc", lines=37)
    assert sum(line.startswith("step ") for line in th_out) == 6
    assert th_out[-1].startswith("inf [inf, ")


def test_deepspeech2_ctc_like_torch(tmp_path, monkeypatch, capsys):
    """SeanNaren/deepspeech.pytorch: ``torch.stft`` (Hamming window) log spectrograms,
    ``MaskConv`` (``masked_fill`` past each length), ``get_seq_lens`` by ``true_divide`` of an
    int tensor, ``BatchRNN`` over ``pack_padded_sequence`` / ``pad_packed_sequence`` with the
    directions summed, ``SequenceWise`` BatchNorm, ``CTCLoss(reduction='sum')`` / batch size,
    ``clip_grad_norm_``, Nesterov SGD; ``InferenceBatchSoftmax``, ``GreedyDecoder`` with
    offsets, and the unidirectional model's ``Lookahead`` (grouped ``conv1d``).
    rtol 3e-5: torch's float32 CTC gradient is itself 4.7e-5 (relative to its largest
    entry) from the float64 one on a 50-step input, shardflow's 1.5e-7 (docs/COMPAT.md,
    "Session 40 (compat-audio)"); the gradient norms printed differ by up to 5e-6."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "deepspeech2", lines=44, rtol=3e-5)
    assert sum(line.startswith("step ") for line in th_out) == 4


def test_m5_speech_commands_like_torch(tmp_path, monkeypatch, capsys):
    """pytorch/audio's speech command tutorial: ``Resample`` (a strided ``conv1d`` with a
    windowed-sinc kernel), ``pad_sequence`` collate, the M5 net (``Conv1d`` on raw audio,
    ``F.avg_pool1d(x, x.shape[-1])``, ``log_softmax(dim=2)``), Adam + ``StepLR``,
    ``nll_loss(output.squeeze(), target)``, a shuffled DataLoader (torch's permutations),
    accuracy and ``predict``; then a Slaney ``MelSpectrogram`` + ``AmplitudeToDB(top_db=80)``.
    Every line agrees."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "m5_speech_commands", lines=35)
    assert th_out[-2].startswith("mel (1, 16, 57)")


def test_spectral_denoise_and_griffinlim_like_torch(tmp_path, monkeypatch, capsys):
    """STFT mask estimation: ``stft(return_complex=True)`` magnitudes through an LSTM mask,
    complex ``spec * mask``, ``istft(length=...)``, negative SI-SNR + magnitude MSE, 6 Adam
    steps; phases by ``angle``, ``view_as_real`` / ``view_as_complex``; an ``rfft`` low-pass
    (``rfftfreq``, ``irfft(n=)``), ``fft(norm="ortho")`` with ``fftshift``; torchaudio's
    ``griffinlim`` loop (``torch.rand`` complex phases, momentum). Every line agrees."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "spectral_denoise", lines=16)
    assert th_out[-2].startswith("griffinlim [")


def test_adaptive_softmax_word_lm_like_torch(tmp_path, monkeypatch, capsys):
    """word_language_model with ``nn.AdaptiveLogSoftmaxWithLoss(head_bias=True)``: the
    decoder's ``loss`` trained by manual SGD after ``clip_grad_norm_``, lr annealing,
    perplexities, generation by ``log_prob`` + ``multinomial`` (torch's draws), ``predict``.
    Every line agrees."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "adaptive_lm", lines=29)
    assert th_out[-1] == "log_prob rows sum to 1 True"


def test_siamese_dgi_bilinear_bucketize_like_torch(tmp_path, monkeypatch, capsys):
    """A contrastive siamese net (``F.pairwise_distance(keepdim=True)``), ``PairwiseDistance``
    with p = 1 / inf / of equal inputs (``eps``), ``CosineEmbeddingLoss``,
    ``TripletMarginLoss``; Deep Graph Infomax's ``nn.Bilinear`` discriminator; e2e-coref's
    ``torch.bucketize`` distance buckets, ``out_int32``, ``searchsorted(side='right')``.
    Every line agrees."""
    th_out, _ = _same_run(tmp_path, monkeypatch, capsys, "siamese_bilinear", lines=35)
    assert th_out[-1].startswith("float bins [1, 2, 4, 1, 4]")
