"""Public PyTorch programs, session 36 (programs-af): each run as a script on torch and, with
its imports rewritten, on shardflow, from the same ``manual_seed`` (shardflow draws torch's
numbers: docs/COMPAT.md "Random seeds"; no weight copying, no shared draws), compared on
every printed line and on the files it writes. See ``test_public_programs.py`` and
docs/COMPAT.md, "Public programs".
"""

import re
import warnings

import numpy as np
import pytest

from shardflow.backend import user_warning

from .programs._harness import HERE, assert_close, run_script
from .test_public_programs_more_h import same_printout

pytestmark = pytest.mark.usefixtures("torch_single_thread")


def _run(tmp_path, monkeypatch, capsys, path, argv=(), modules=None, files=None, seed=0):
    """Run ``programs/<path> ARGV`` as ``__main__`` in ``tmp_path/<th|sf>`` on torch then
    shardflow, each after ``manual_seed(seed)`` and ``np.random.seed(seed)``; ``files``
    (``{name: bytes}``) are written into each run's directory first, ``modules`` (``{name:
    module}``) stand in ``sys.modules``. Returns ``[(module, printed lines, warning
    messages, run directory), ...]``, torch's first."""
    import torch

    import shardflow

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        where.mkdir(parents=True)
        for name, data in (files or {}).items():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            (where / name).write_bytes(data)
        monkeypatch.chdir(where)
        lib.manual_seed(seed)
        np.random.seed(seed)
        if use_sf:  # once-per-process warnings as in a fresh process (an earlier test in this worker may have given them)
            monkeypatch.setattr(user_warning, "_given", set())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = run_script(HERE / path, use_sf, argv=argv, modules=modules)
        messages = [re.sub(r" \(Triggered internally at [^)]*\)$", "", f"{w.category.__name__}: {w.message}")
                    for w in caught]
        runs.append((module, capsys.readouterr().out.splitlines(), messages, where))
    return runs


# karpathy/llm.c ----------------------------------------------------------------------------

# the wall-clock parts of llm.c's step lines and its version line
_LLMC_CLOCK = re.compile(r"\(\d+\.\d+ ms \| \d+ tok/s\)|avg: \d+\.\d+ms|Running pytorch .*")


@pytest.mark.parametrize("flash", ["0", "1"])
def test_llmc_train_gpt2_like_torch(tmp_path, monkeypatch, capsys, flash):
    """llm.c's ``train_gpt2.py`` (``programs/llmc``): a 2-layer GPT-2 with the real 50257
    vocabulary, initialised through a ``torch.Generator`` seeded 42; one forward/backward
    written to the C bridge files (``gpt2_d2.bin`` in float32 and, through ``.to(bfloat16)
    .view(torch.int16)``, bfloat16, vocabulary padded by ``F.pad`` to 50304;
    ``gpt2_d2_debug_state.bin`` with x, y, logits, loss and every gradient; the
    tokenizer), then 3 AdamW steps of 2 accumulated micro-batches with ``clip_grad_norm_``,
    validation every 2 steps and 32 tokens sampled by ``generate`` (``topk`` 40,
    ``multinomial``). Manual attention and, with ``--flash 1``, SDPA.

    Every printed line agrees (numbers to rtol 1e-5; the sampled tokens exactly: torch's
    draws), apart from the wall-clock times and the version line; the weight files are
    byte for byte torch's, the debug state to 1e-6 (logits and gradients, a few ulps) and
    the log file's losses to 1e-6."""
    # torch.distributed.optim's first import warns 67 times (its TorchScript'd optimizers):
    # torch's doing at import, not the program's, and only in the first test to import it
    import torch.distributed.optim  # noqa: F401

    from .programs.llmc._standin import tiktoken_module, token_shard

    argv = ["--input_bin", "train.bin", "--input_val_bin", "val.bin", "--model", "d2", "--batch_size", "2",
            "--sequence_length", "8", "--total_batch_size", "32", "--num_iterations", "3",
            "--val_loss_every", "2", "--val_max_steps", "2", "--sample_every", "2", "--output_dir", "out",
            "--flash", flash]
    runs = _run(tmp_path, monkeypatch, capsys, "llmc/train_gpt2.py", argv=argv,
                modules={"tiktoken": tiktoken_module()},
                files={"train.bin": token_shard(200, 0), "val.bin": token_shard(100, 1)})
    (_, th_out, th_warned, th_dir), (_, sf_out, sf_warned, sf_dir) = runs
    assert sf_warned == th_warned
    assert sum(line.startswith("step ") for line in th_out) == 3
    assert sum(line.startswith("<eot>t") for line in th_out) == 3  # 3 samples
    same_printout([_LLMC_CLOCK.sub("", line) for line in sf_out], [_LLMC_CLOCK.sub("", line) for line in th_out])
    samples = [line for line in th_out if line.startswith("<eot>")]
    assert [line for line in sf_out if line.startswith("<eot>")] == samples
    for name in ("gpt2_tokenizer.bin", "gpt2_d2.bin", "gpt2_d2_bf16.bin"):
        assert (sf_dir / name).read_bytes() == (th_dir / name).read_bytes(), name
    th_state, sf_state = (np.fromfile(d / "gpt2_d2_debug_state.bin", np.int32) for d in (th_dir, sf_dir))
    np.testing.assert_array_equal(sf_state[:256 + 2 * 16], th_state[:256 + 2 * 16])  # header, x, y
    assert_close(sf_state[288:].view(np.float32), th_state[288:].view(np.float32), "debug state", atol=1e-6)
    th_log, sf_log = ((d / "out" / "main.log").read_text() for d in (th_dir, sf_dir))
    same_printout(sf_log.splitlines(), th_log.splitlines(), atol=2e-6, what="main.log")


# d2l.ai, chapter_optimization ----------------------------------------------------------------

# the wall-clock part of d2l's "loss: 0.245, 0.012 sec/epoch"
_D2L_CLOCK = re.compile(r"\d+\.\d+ sec/epoch")


def _airfoil(rows=200, seed=0) -> bytes:
    """An ``airfoil_self_noise.dat``-shaped file: 6 tab-separated columns, the last a noisy
    linear function of the other five."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (rows, 5)) * [20000, 20, 0.3, 70, 0.05]
    y = 130 - X @ [4e-4, 0.4, 10, 0.05, 100] + rng.normal(0, 2, rows)
    return "".join("\t".join(f"{v:.6g}" for v in row) + "\n" for row in np.column_stack([X, y])).encode()


def test_d2l_optimization_chapter_like_torch(tmp_path, monkeypatch, capsys):
    """d2l.ai's optimization chapter (``programs/d2l_book``): gradient descent and
    Newton's method whose iterate becomes a 0-d tensor (``f'{x:f}'``, ``print(x)``), noisy 2-D
    SGD from ``torch.normal(0.0, 1, (1,)).item()`` under three learning-rate schedules,
    minibatch SGD / momentum / Adagrad / RMSprop / Adadelta / Adam / Yogi written by hand
    under ``no_grad`` (``v[:] = ...``, ``p[:] -= ...``) and each one's ``torch.optim``
    counterpart on shuffled airfoil-shaped batches, then a LeNet trained with no scheduler,
    with the book's own schedulers and with ``MultiStepLR`` (told apart by
    ``scheduler.__module__ == lr_scheduler.__name__``). From the same seed every printed
    line agrees (numbers to rtol 1e-5) but the seconds per epoch."""
    # torch's scalar-of-a-graph warning is once per process (TORCH_WARN_ONCE): an earlier
    # test in this worker may have given it, so both libraries warn always here
    import torch

    import shardflow

    before = [(lib, lib.is_warn_always_enabled()) for lib in (torch, shardflow)]
    for lib, _ in before:
        lib.set_warn_always(True)
    try:
        runs = _run(tmp_path, monkeypatch, capsys, "d2l_book/chapter_optimization.py",
                    files={"airfoil_self_noise.dat": _airfoil()})
    finally:
        for lib, flag in before:
            lib.set_warn_always(flag)
    (_, th_out, th_warned, _), (_, sf_out, sf_warned, _) = runs
    assert sf_warned == th_warned
    assert sum(line.startswith("loss: ") for line in th_out) == 18
    assert sum(line.startswith("train loss") for line in th_out) == 5
    same_printout([_D2L_CLOCK.sub("", line) for line in sf_out], [_D2L_CLOCK.sub("", line) for line in th_out])


# d2l's fra-eng pairs, a few dozen (tab-separated as in fra.txt; the book's four test
# sentences among them)
_FRA_ENG = """Go.\tVa !
Go.\tMarche.
Hi.\tSalut !
Run!\tCours !
Run!\tCourez !
Who?\tQui ?
Wow!\tÇa alors !
Fire!\tAu feu !
Help!\tÀ l'aide !
Stop!\tArrête-toi !
Wait!\tAttends !
Go on.\tPoursuis.
Hello!\tBonjour !
I see.\tJe comprends.
I try.\tJ'essaye.
I won!\tJ'ai gagné !
I lost.\tJ'ai perdu.
I'm OK.\tJe vais bien.
I'm home.\tJe suis chez moi.
I'm calm.\tJe suis calme.
He's calm.\tIl est calme.
He's home.\tIl est chez lui.
He's OK.\tIl va bien.
He ran.\tIl a couru.
He won.\tIl a gagné.
He lost.\tIl a perdu.
I ran.\tJ'ai couru.
I see him.\tJe le vois.
I'm sad.\tJe suis triste.
He's sad.\tIl est triste.
Go home.\tVa chez toi.
I'm fine.\tJe vais bien.
He's fine.\tIl va bien.
I'm lost.\tJe suis perdu.
He's lost.\tIl est perdu.
Stay calm.\tReste calme.
Hi, I'm home.\tSalut, je suis chez moi.
I lost, he won.\tJ'ai perdu, il a gagné.
"""


def test_d2l_transformer_like_torch(tmp_path, monkeypatch, capsys):
    """d2l.ai's Transformer from scratch (``programs/d2l_book/chapter_transformer.py``, its
    ``main()``): the multi-head attention, positional encoding and block checks, then an
    encoder-decoder Transformer trained 40 epochs on fra-eng pairs with dropout 0.1
    (torch's masks from the same seed), ``MaskedSoftmaxCELoss`` over int32 valid lengths,
    the hand-written gradient clipping and Adam; greedy translations with BLEU and the
    attention weights.

    Everything before training agrees line for line (numbers to rtol 1e-5). Training
    cannot, past its first steps, and torch cannot either: clipped gradients of ~1e-7
    meet Adam's eps of 1e-8, so a float32 rounding in a gradient element (1% of one of
    size 4e-6 from sums of terms near 1) moves its weight by 1e-5 in the first step (measured),
    and the chaos grows: torch itself, with 30% of its initial weights moved by one ulp,
    ends epoch 10 5e-4 apart and translates differently by epoch 60. So the loss at epoch
    10 is held to rtol 1e-3, the later lines to their words and count (the 4 translations
    and the weights' shape). The trained model is then compared on its own: torch's
    trained weights loaded into the shardflow net, ``predict_seq2seq`` (eval mode, the
    decoder's key/value cache through ``torch.cat(..., axis=1)``) gives the same
    translations, BLEU and every attention weight (1e-5)."""
    import torch

    import shardflow

    from .programs._harness import copy_weights
    from .test_public_programs_more_h import _NUMBER

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        where = tmp_path / ("sf" if use_sf else "th")
        (where / "fra-eng").mkdir(parents=True)
        (where / "fra-eng" / "fra.txt").write_text(_FRA_ENG, encoding="utf-8")
        monkeypatch.chdir(where)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = run_script(HERE / "d2l_book/chapter_transformer.py", use_sf, as_main=False)
            lib.manual_seed(0)
            net = module.main()
        runs.append((module, net, capsys.readouterr().out.splitlines(), [str(w.message) for w in caught]))
    (th, th_net, th_out, th_warned), (sf, sf_net, sf_out, sf_warned) = runs
    assert sf_warned == th_warned
    first = next(i for i, line in enumerate(th_out) if line.startswith("plot 10 "))
    same_printout(sf_out[:first], th_out[:first], what="before training")
    same_printout(sf_out[first:first + 1], th_out[first:first + 1], rtol=1e-3, what="epoch 10")
    words = lambda lines: [_NUMBER.sub("#", line.split(" => ")[0].replace("torch.", "shardflow.")) for line in lines]  # noqa: E731
    assert words(sf_out[first + 1:]) == words(th_out[first + 1:])
    assert sum(" => " in line for line in th_out) == 4

    copy_weights(th_net, sf_net)
    for eng in ["go .", "i lost .", "he's calm .", "i'm home .", "he won ."]:
        results = []
        for prog, net in ((th, th_net), (sf, sf_net)):
            src_vocab, tgt_vocab = prog.load_data_nmt(64, 10)[1:]
            translation, weights = prog.predict_seq2seq(net, eng, src_vocab, tgt_vocab, 10, prog.try_gpu(), True)
            flat = [head.detach().numpy() for step in weights for attn in step for blk in attn for head in blk]
            results.append((translation, flat))
        assert results[1][0] == results[0][0], eng
        assert len(results[1][1]) == len(results[0][1]) > 0
        for s, t in zip(results[1][1], results[0][1]):
            assert_close(s, t, f"attention weights for {eng!r}", atol=1e-5)


# pytorch-labs/gpt-fast ---------------------------------------------------------------------

# the wall-clock parts of gpt-fast's printout
_GPT_FAST_CLOCK = re.compile(r"(Time to load model|Time for inference \d+|Bandwidth achieved|Average tokens/sec): .*")


def _gpt_fast(tmp_path, monkeypatch, capsys, argv, raises=None):
    """generate.py run as a script on torch then shardflow, its sibling ``model`` module
    loaded for the same framework and the tokenizer stand-in given as ``tokenizer``."""
    import torch

    import shardflow

    from .programs._harness import load_file
    from .programs.gpt_fast._tokenizer_standin import tokenizer_module

    runs = []
    for use_sf, lib in ((False, torch), (True, shardflow)):
        monkeypatch.chdir(tmp_path)
        model = load_file(HERE / "gpt_fast/model.py", use_sf, f"gpt_fast_model_{'sf' if use_sf else 'th'}")
        lib.manual_seed(0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            modules = {"model": model, "tokenizer": tokenizer_module()}
            if raises is None:
                run_script(HERE / "gpt_fast/generate.py", use_sf, argv=argv, modules=modules)
                error = None
            else:
                with pytest.raises(raises) as info:
                    run_script(HERE / "gpt_fast/generate.py", use_sf, argv=argv, modules=modules)
                error = str(info.value)
        runs.append((capsys.readouterr().out.splitlines(), [str(w.message) for w in caught], error))
    return runs


def test_gpt_fast_generate_like_torch(tmp_path, monkeypatch, capsys):
    """gpt-fast's ``generate.py`` with its ``model.py`` (``programs/gpt_fast``): a 2-layer
    GQA Llama-style model (RMSNorm, RoPE from ``torch.polar``, fused wqkv, SDPA with a
    boolean mask cut from the causal mask by ``input_pos``) built on the meta device,
    ``to_empty`` and ``normal_`` weights in bfloat16, then 2 samples of 16 tokens: prefill,
    one token at a time into the bfloat16 KV cache with an int32 ``input_pos`` bumped in
    place, top-k by ``torch.where(logits < pivot, -inf, logits)`` and sampling by
    ``argmax(probs / exponential_)``; then the same with speculative decoding (a 1-layer
    draft model proposes 3 tokens, the target checks them in one forward: ``rand_like``,
    ``nonzero``, ``torch.minimum(torch.ones(()), q / p)``, ``seq[a:b] = next_tokens[:n]``).
    Greedy (the program's ``--top_k 1``) with the prompt "Once.upon.a.time": every printed
    line agrees, the generated text character for character, but the clock's numbers.
    (The prompt is chosen: with "Once upon a time" the 15th greedy token differs, a
    bfloat16 near-tie as below.)

    Sampled (``--top_k 20``) the texts part after a few tokens and are compared in their
    words only: shardflow's bfloat16 SDPA differs from torch's CPU flash kernel by one
    bfloat16 unit in ~0.5% of outputs (values within 1e-5 of a rounding tie; not closed by
    emulating its ``exp_u20`` and lane-order sums), and ``argmax(probs / q)`` over bfloat16
    values has exact ties that one unit flips (torch's own greedy text with and without
    speculation differs at such a tie for another prompt).

    With ``--precision float32`` the program fails in torch: the KV cache stays bfloat16
    (its default dtype) and ``k_out[:, :, input_pos] = k_val`` refuses the float32 keys;
    shardflow cast them silently (fixed: the same RuntimeError, after the same printout)."""
    import torch._dynamo.config  # noqa: F401  (the script's imports; their first import may warn)
    import torch._inductor.config  # noqa: F401

    from .test_public_programs_more_h import _NUMBER

    clock = lambda lines: [_GPT_FAST_CLOCK.sub(r"\1", line) for line in lines]  # noqa: E731
    base = ["--checkpoint_path", "checkpoints/x/tiny/model.pth", "--num_samples", "2", "--max_new_tokens", "16"]
    draft = ["--draft_checkpoint_path", "checkpoints/x/tinier/model.pth", "--speculate_k", "3"]
    for extra in ([], draft):
        argv = [*base, "--top_k", "1", "--prompt", "Once.upon.a.time", *extra]
        (th_out, th_warned, _), (sf_out, sf_warned, _) = _gpt_fast(tmp_path, monkeypatch, capsys, argv)
        assert sf_warned == th_warned
        assert sum(line.startswith("<1>Once.upon.a.time") for line in th_out) == 2
        assert clock(sf_out) == clock(th_out), extra

        argv = [*base, "--top_k", "20", "--temperature", "1.5", *extra]
        (th_out, th_warned, _), (sf_out, sf_warned, _) = _gpt_fast(tmp_path, monkeypatch, capsys, argv)
        assert sf_warned == th_warned
        words = lambda lines: [_NUMBER.sub("#", line) for line in clock(lines) if not line.startswith("<1>")]  # noqa: E731
        assert words(sf_out) == words(th_out)
        assert sum(line.startswith("<1>Hello, my name is") for line in sf_out) == 2

    runs = _gpt_fast(tmp_path, monkeypatch, capsys, [*base, "--precision", "float32"], raises=RuntimeError)
    (th_out, _, th_error), (sf_out, _, sf_error) = runs
    assert sf_error == th_error == ("Index put requires the source and destination dtypes match, got BFloat16 "
                                    "for the destination and Float for the source.")
    assert clock(sf_out) == clock(th_out)


# karpathy/nn-zero-to-hero, makemore part 3 ----------------------------------------------------


def test_makemore_part3_bn_like_torch(capsys, monkeypatch):
    """makemore_part3_bn (``programs/nn_zero_to_hero/makemore_part3_bn.py``, the lecture
    left out of ``test_public_programs_more_o.py``): the MLP with batch norm by hand and
    running statistics under ``no_grad``, the calibration pass and split losses, then the deep
    Linear / BatchNorm1d / Tanh stack with ``retain_grad()`` on every output, the saturation
    lines (``'%+.2f' % t.mean()``), ``torch.histogram(t, density=True)`` of activations,
    gradients and weight gradients (``'%+f'`` / ``'%e'`` of tensors, ``tuple(p.shape)``),
    the update:data ratios, eval mode and 20 sampled names (``multinomial`` with a seeded
    generator). Every printed line agrees (numbers to rtol 1e-5), the names letter for
    letter."""
    from .test_public_programs_more_o import _run_both, _same_tensors

    (th, th_out), (sf, sf_out) = _run_both("makemore_part3_bn", capsys, monkeypatch, seed=0)
    assert sum(line.startswith("layer ") for line in th_out) == 10
    assert len(th_out) > 40
    # a Tanh output's mean gradient is zero in exact arithmetic (BatchNorm follows), so
    # '%+f' prints its rounding noise as +0.000000 or -0.000000: the sign is not compared
    zero = lambda lines: [re.sub(r"[+-](0\.0+)(?![\d.])", r"\1", line) for line in lines]  # noqa: E731
    same_printout(zero(sf_out), zero(th_out), what="part3")
    assert sf_out[-20:] == th_out[-20:]  # the sampled names
    _same_tensors(sf.parameters, th.parameters, "trained parameters")
    np.testing.assert_allclose(np.array(sf.ud), np.array(th.ud), rtol=1e-4, atol=1e-5)
