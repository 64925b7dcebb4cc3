"""More public PyTorch programs (tests/parity/programs/) run on torch and, with only their
imports changed, on shardflow, from the same initial weights, compared step by step (see
``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

Each program's own randomness is made equal as the docstrings say (``_harness``): dropout
modules set to p=0 or given shared masks, random samplers drawing from one shared stream.
"""

import random

import numpy as np
import pytest
import torch

from .programs._harness import (
    _Draws,
    _proxy_path,
    assert_close,
    assert_same_state,
    copy_weights,
    dropout_off,
    load_pair,
    run_script,
    same_draws,
    same_weights,
)


@pytest.fixture(autouse=True)
def _torch_single_thread():
    """Small programs of many tiny ops: torch's intra-op threads only add synchronisation."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _shared_sampler(prog, seed=0):
    """``RandomSampler`` whose permutations come from a NumPy stream seeded ``seed``."""
    return _Draws(prog.torch, np.random.default_rng(seed), ["RandomSampler"]).utils.data.RandomSampler


def test_seq2seq_translation_trains_like_torch():
    """pytorch/tutorials seq2seq_translation (the batched version): EncoderRNN (Embedding +
    batch_first GRU), AttnDecoderRNN with BahdanauAttention, teacher forcing, topk greedy
    decoding, NLLLoss, two Adam optimizers; 3 epochs of 2 batches. The loader's
    RandomSampler draws from one shared stream, Python's `random` (evaluateRandomly's
    choice of pairs) is seeded alike, dropout p=0. Losses agree to ~1e-7 (rtol 1e-5), so do
    the greedy translations, the attention weights of one evaluation and the weights, but
    for BahdanauAttention's Va bias: its gradient is zero in exact arithmetic (a shift of
    every score that the softmax ignores), so Adam steps it by about lr on the sign of
    rounding noise (measured: 1.2e-4 apart after 6 steps); it is held to 6 lr."""
    th, sf = load_pair("seq2seq_translation")
    same_weights(th, sf, "EncoderRNN", "AttnDecoderRNN", prepare=dropout_off)
    results = []
    for prog in (th, sf):
        prog.RandomSampler = _shared_sampler(prog)
        random.seed(0)
        results.append(prog.main())
    (th_enc, th_dec, th_losses, th_text), (sf_enc, sf_dec, sf_losses, sf_text) = results
    assert len(sf_losses) == len(th_losses) == 3
    assert_close(sf_losses, th_losses, "epoch losses")
    assert sf_text == th_text
    sentence = th.pairs[0][0]
    th_words, th_attn = th.evaluate(th_enc, th_dec, sentence, th.input_lang, th.output_lang)
    sf_words, sf_attn = sf.evaluate(sf_enc, sf_dec, sentence, sf.input_lang, sf.output_lang)
    assert sf_words == th_words
    assert_close(sf_attn.numpy(), th_attn.numpy(), "attention weights")
    assert_same_state(sf_enc, th_enc, "EncoderRNN")
    # Va's bias shifts every score of a query alike, which the softmax ignores: its gradient
    # is zero in exact arithmetic, so Adam steps it on rounding noise (6 steps of lr 1e-3)
    va_bias = lambda key, value: (6 * 1e-3, np.ones(value.shape, bool)) if key == "attention.Va.bias" else None  # noqa: E731
    assert_same_state(sf_dec, th_dec, "AttnDecoderRNN", rounding_only=va_bias)
    assert th_losses[-1] < th_losses[0]


def _shared_dropout(prog, seed=0):
    """The program's ``F.dropout`` with masks drawn from a NumPy stream seeded ``seed``
    (scaled by 1 / (1 - p) as F.dropout does); identity when not training."""
    rng, lib = np.random.default_rng(seed), prog.torch

    def dropout(x, p=0.5, training=True, inplace=False):
        if not training:
            return x
        keep = (rng.random(tuple(x.shape)) >= p).astype(np.float32) / np.float32(1 - p)
        return x * lib.from_numpy(keep)

    _proxy_path(prog, "F").dropout = dropout


@pytest.mark.filterwarnings("ignore:Default grid_sample and affine_grid behavior")  # both warn: the
@pytest.mark.filterwarnings("ignore:size_average and reduce args")  # tutorial's own calls
def test_spatial_transformer_trains_like_torch():
    """pytorch/tutorials spatial_transformer: the localisation net regresses theta,
    F.affine_grid + F.grid_sample warp the input, then a CNN with Dropout2d and F.dropout;
    SGD, nll_loss (and the legacy size_average=False in test()), 3 epochs of one batch.
    The module-level model takes torch's weights after loading; Dropout2d is set to p=0 and
    F.dropout gets the same NumPy masks in both runs; the shuffled loaders are rebuilt on the
    same data with a shared-stream sampler (the masks' rows must meet the same samples).

    The identity-initialised theta puts every grid point on a pixel centre, where the
    bilinear gradient is one-sided: parity needs the grid to the bit (PyTorch's float32
    linspace and its order of operations in affine_grid and grid_sample's unnormalisation;
    before that fix fc_loc's gradient differed by 70% and the second loss at 1e-3)."""
    th, sf = load_pair("spatial_transformer")
    copy_weights(th.model, sf.model)
    dropout_off(th.model, sf.model)
    for prog in (th, sf):
        _shared_dropout(prog)
        data = prog.torch.utils.data
        for name in ("train_loader", "test_loader"):
            loader = getattr(prog, name)
            setattr(prog, name, data.DataLoader(loader.dataset, batch_size=loader.batch_size,
                                                sampler=_shared_sampler(prog, seed=len(name))(loader.dataset)))
    th_train, th_test = th.main()
    sf_train, sf_test = sf.main()
    assert len(sf_train) == len(th_train) == 3
    assert_close(sf_train, th_train, "train losses")
    assert_close([t[0] for t in sf_test], [t[0] for t in th_test], "test losses")
    assert [t[1] for t in sf_test] == [t[1] for t in th_test]
    assert_same_state(sf.model, th.model, "Net")
