"""More public PyTorch programs (tests/parity/programs/) run on torch and, with only their
imports changed, on shardflow, from the same initial weights, compared step by step (see
``test_public_programs.py`` and docs/COMPAT.md, "Public programs").

Each program's own randomness is made equal as the docstrings say (``_harness``): dropout
modules set to p=0 or given shared masks, random samplers drawing from one shared stream.
"""

import random
from pathlib import Path

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

pytestmark = pytest.mark.usefixtures("torch_single_thread")  # tests/parity/conftest.py


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
    before that fix fc_loc's gradient differed by 70% and the second loss at 1e-3).
    torch's generator is seeded before the program builds its module-level model: with the
    weights left to whatever earlier tests drew, some draws put grid points within an ulp of
    a pixel boundary after a step, and the losses then differed by 2e-5 (seen when the
    autograd tests ran first); the seed makes the run the same in any test order."""
    torch.manual_seed(0)
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


def _linear_from_torch(program, records, use_shardflow):
    """Make the classes the script derives from ``nn.Linear`` (its ``Layer``) start from
    torch's weights: ``program.nn`` becomes a view of the framework's ``nn`` whose
    ``Linear.reset_parameters`` records (torch run) or loads (shardflow run, same order) the
    initial state. The script's Layer builds its Adam after ``__init__`` returns from
    Linear's, so the optimizer holds the loaded parameters."""
    nn = program.nn
    base = nn.Linear

    class Linear(base):
        def reset_parameters(self):
            super().reset_parameters()
            if not use_shardflow:
                records.append({k: v.detach().numpy().copy() for k, v in self.named_parameters()})
                return
            state = records[len(loaded)]
            loaded.append(self)
            with program.torch.no_grad():
                for k, v in self.named_parameters():
                    v.copy_(program.torch.from_numpy(state[k]))

    loaded = []
    view = type(nn)(nn.__name__)
    view.__dict__.update(nn.__dict__)
    view.Linear = Linear
    program.nn = view


def test_mnist_forward_forward_trains_like_torch(capsys):
    """pytorch/examples mnist_forward_forward, run as a script (`--log-interval 1`): two
    Forward-Forward layers, each trained 4 steps with its own Adam on
    log1p(exp(threshold -+ goodness)) of `.norm`-normalised inputs, the second fed the
    first's `.detach()`ed outputs; then predict() over the 10 overlaid labels. get_y_neg's
    torch.randint gets the same NumPy draws in both runs and the layers start from torch's
    weights (``_linear_from_torch``). The printed losses (Python's full float repr), the
    train/test errors and the final weights agree to rtol 1e-5."""
    path = Path(__file__).parent / "programs" / "mnist_forward_forward.py"
    records, runs = [], []
    for use_sf in (False, True):
        def after_imports(mod, _sf=use_sf):
            same_draws((mod,), ["randint"])
            _linear_from_torch(mod, records, _sf)

        mod = run_script(path, use_sf, argv=["--log-interval", "1"], after_imports=after_imports)
        out = capsys.readouterr().out
        losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("Loss:")]
        errors = [float(line.split()[-1]) for line in out.splitlines() if line.endswith(tuple("0123456789"))
                  and line.startswith(("train error:", "test error:"))]
        runs.append((mod, losses, errors))
    (th, th_losses, th_errors), (sf, sf_losses, sf_errors) = runs
    assert len(sf_losses) == len(th_losses) == 8  # 2 layers x 4 epochs
    assert_close(sf_losses, th_losses, "per-layer losses")
    assert len(sf_errors) == len(th_errors) == 2
    assert_close(sf_errors, th_errors, "train and test error")
    for i, (sf_layer, th_layer) in enumerate(zip(sf.net.layers, th.net.layers)):
        assert_same_state(sf_layer, th_layer, f"layer {i}")
    assert th_losses[3] < th_losses[0]


def _shared_shuffling(prog, seed=0):
    """The program's ``random_split`` and ``DataLoader(shuffle=True)`` drawing their
    permutations from one NumPy stream seeded ``seed`` (the frameworks' generators
    differ); everything else is the framework's own."""
    rng, data = np.random.default_rng(seed), prog.torch.utils.data
    sampler = _Draws(prog.torch, rng, ["RandomSampler"]).utils.data.RandomSampler

    def random_split(dataset, lengths):
        perm, start, parts = rng.permutation(len(dataset)).tolist(), 0, []
        for n in lengths:
            parts.append(data.Subset(dataset, perm[start:start + n]))
            start += n
        return parts

    def loader(dataset, shuffle=False, **kwargs):
        return data.DataLoader(dataset, sampler=sampler(dataset) if shuffle else None, **kwargs)

    prog.random_split, prog.DataLoader = random_split, loader


def test_text_classification_trains_like_torch():
    """pytorch/tutorials text_sentiment_ngrams (the torchtext-library version, torchtext
    stood in): nn.EmbeddingBag(text, offsets) + Linear, collate_batch's cumsum offsets,
    CrossEntropyLoss, SGD lr 5 with clip_grad_norm_(0.1), StepLR(optimizer, 1.0, gamma=0.1)
    stepped when validation accuracy drops; 3 epochs of 3 batches, then test accuracy and a
    prediction. random_split and the shuffled loaders draw from one shared stream; the
    module-level model takes torch's weights after loading. Every batch loss and every
    clip_grad_norm_ total norm (the clipping acts: norms 0.2 to 0.4 against 0.1) to rtol 1e-5;
    the validation accuracies, the two StepLR steps (lr 5 -> 0.05), the test accuracy and
    the prediction are equal."""
    from .programs._harness import record_calls

    th, sf = load_pair("text_classification")
    copy_weights(th.model, sf.model)
    norms = {}
    for prog in (th, sf):
        _shared_shuffling(prog)
        record_calls(prog, "torch.nn.utils", "clip_grad_norm_", norms.setdefault(prog.__name__, []))
    th_losses, th_acc, th_test, th_pred = th.main()
    sf_losses, sf_acc, sf_test, sf_pred = sf.main()
    th_norms, sf_norms = norms[th.__name__], norms[sf.__name__]
    assert len(sf_losses) == len(th_losses) == 9
    assert_close(sf_losses, th_losses, "batch losses")
    assert_close(sf_norms, th_norms, "gradient norms before clipping")
    assert min(th_norms) > 0.1  # the clipping acts
    assert (sf_acc, sf_test, sf_pred) == (th_acc, th_test, th_pred)
    assert sf.optimizer.param_groups[0]["lr"] == th.optimizer.param_groups[0]["lr"]
    assert_same_state(sf.model, th.model, "TextClassificationModel")
    assert th_losses[-1] < th_losses[0]
