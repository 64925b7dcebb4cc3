"""`shardflow train --resume` picks what it may continue from, and refuses what it may not
(issue 25, gaps 5 and 2): a checkpoint whose parameters are not finite is skipped for the
last finite one; a folder whose checkpoints are all unusable stops the run instead of
silently starting from step 0; a checkpoint trained on other data (vocabulary, its hash,
the data source) or with another seed is refused with the fix; what may change is printed."""

import os

import numpy as np
import pytest

import shardflow as sf
from shardflow.cli.train import main

SRC = "\n".join(f"def f{i}(x):\n    return x * {i} + {i % 7}\n" for i in range(120))


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.py").write_text(SRC)
    return str(d)


def tiny(corpus, out, *extra):
    return ["gpt", "--data", corpus, "--out", str(out), "--n-layer", "1", "--n-head", "2",
            "--n-embd", "16", "--block-size", "16", "--batch-size", "4", "--eval-iters", "1",
            "--eval-interval", "100", "--ckpt-interval", "1", "--log-interval", "1",
            "--sample-tokens", "2", "--no-progress", "--warmup-steps", "0", "--num-workers", "0",
            "--keep-checkpoints", "10", *extra]


def ckpt(out, step):
    return os.path.join(out, f"ckpt_{step:07d}.safetensors")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy overflow in the diverging model
def test_resume_skips_a_checkpoint_with_non_finite_parameters(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(tiny(corpus, out, "--max-steps", "2")) == 0
    # lr 1e39: step 3's update overflows float32 (its gradient is finite, so it is applied),
    # ckpt 3 holds inf parameters, step 4's loss is NaN and the run stops
    assert main(tiny(corpus, out, "--max-steps", "6", "--resume", "--lr", "1e39")) == 1
    err = capsys.readouterr().err
    assert "but the parameters were already non-finite" in err  # not "still finite"
    assert not sf.load(ckpt(out, 3))["finite"]
    rc = main(tiny(corpus, out, "--max-steps", "6", "--resume", "--lr", "1e39"))
    cap = capsys.readouterr()
    assert rc == 1
    assert (f"--resume: skipped checkpoint {ckpt(out, 3)}: its parameters are not finite"
            in cap.out)
    assert f"resumed from {ckpt(out, 2)} at step 2" in cap.out
    assert f"Last checkpoint with finite parameters: {ckpt(out, 2)}." in cap.err
    assert "none yet" not in cap.err
    # with a learning rate that works, the run continues from the finite one to the end
    assert main(tiny(corpus, out, "--max-steps", "4", "--resume")) == 0
    final = sf.load(ckpt(out, 4))
    assert final["finite"] and all(np.isfinite(v.numpy()).all() for v in final["model"].values())


def test_resume_stops_when_every_checkpoint_is_unusable(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(tiny(corpus, out, "--max-steps", "2")) == 0
    for step in (1, 2):
        with open(ckpt(out, step), "r+b") as f:
            f.truncate(os.path.getsize(ckpt(out, step)) // 2)
    capsys.readouterr()
    before = open(out / "metrics.csv").read()
    rc = main(tiny(corpus, out, "--max-steps", "4", "--resume"))
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert f"--resume: none of the 2 checkpoint(s) in {out} can be resumed from" in lines[0]
    assert "ckpt_0000002.safetensors: " in lines[0] and "ckpt_0000001.safetensors: " in lines[0]
    assert "run without --resume to start from step 0" in lines[0]
    assert open(out / "metrics.csv").read() == before  # nothing ran
    # asked to start fresh (no --resume): it does
    assert main(tiny(corpus, out, "--max-steps", "2")) == 0
    assert sf.load(ckpt(out, 2))["step"] == 2


def test_resume_in_an_empty_folder_starts_from_step_0(corpus, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(tiny(corpus, out, "--max-steps", "1", "--resume")) == 0
    assert f"--resume: no checkpoint in {out}; starting from step 0" in capsys.readouterr().out


@pytest.fixture
def saved_run(corpus, tmp_path):
    """A run of 2 steps on ``corpus`` (dropout 0.1, seed 7), its checkpoints in ``out``."""
    out = tmp_path / "run"
    assert main(tiny(corpus, out, "--max-steps", "2", "--dropout", "0.1", "--seed", "7")) == 0
    return out


def _other_corpus(tmp_path, text):
    d = tmp_path / "other"
    d.mkdir(exist_ok=True)
    (d / "a.py").write_text(text)
    return str(d)


def _refused_resume(capsys, argv, needles):
    capsys.readouterr()
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_resume_refuses_a_vocabulary_of_the_same_size_with_other_characters(corpus, saved_run,
                                                                           tmp_path, capsys):
    other = _other_corpus(tmp_path, SRC.translate(str.maketrans("0123456789", "ABCDEFGHIJ")))
    _refused_resume(capsys, tiny(other, saved_run, "--max-steps", "3", "--dropout", "0.1",
                                 "--seed", "7", "--resume"),
                    [f"--data: {ckpt(saved_run, 2)} was trained on a vocabulary of ",
                     f"from {corpus}; this run's data {other} gives ",
                     "only in the checkpoint's: '0123456789', only in this run's: 'ABCDEFGHIJ'",
                     f"fix: resume with the data it was trained on (--data {corpus}), or train "
                     "into a new --out"])


def test_resume_refuses_a_smaller_corpus_and_other_text(corpus, saved_run, tmp_path, capsys):
    base = ["--max-steps", "3", "--dropout", "0.1", "--seed", "7", "--resume"]
    # --max-corpus-bytes cuts the text: here the vocabulary loses characters
    _refused_resume(capsys, tiny(corpus, saved_run, *base, "--max-corpus-bytes", "300"),
                    ["was trained on a vocabulary of", "only in the checkpoint's: "])
    # the same characters, other text (a line dropped): the content's hash differs
    other = _other_corpus(tmp_path, SRC.replace("def f3(x):\n    return x * 3 + 3\n", ""))
    _refused_resume(capsys, tiny(other, saved_run, *base),
                    [f"--data: {ckpt(saved_run, 2)} was trained on other data: {corpus} (",
                     f"this run reads {other} ("])


@pytest.mark.parametrize("flag,value,saved", [("--seed", "8", "7"), ("--dropout", "0.2", "0.1")])
def test_resume_refuses_another_seed_or_dropout(corpus, saved_run, capsys, flag, value, saved):
    argv = ["--max-steps", "3", "--resume", "--seed", "7", "--dropout", "0.1", flag, value]
    _refused_resume(capsys, tiny(corpus, saved_run, *argv),
                    [f"{flag}: the checkpoint {ckpt(saved_run, 2)} was trained with {saved}, now {value}",
                     f"fix: resume with {flag} {saved}, or train into a new --out"])


def test_resume_prints_what_changed_and_accepts_moved_data(corpus, saved_run, tmp_path, capsys):
    moved = _other_corpus(tmp_path, SRC)  # the same text in another folder
    capsys.readouterr()
    assert main(tiny(moved, saved_run, "--max-steps", "3", "--dropout", "0.1", "--seed", "7",
                     "--resume", "--lr", "1e-3", "--grad-clip", "0.5")) == 0
    out = capsys.readouterr().out
    assert (f"changed on resume: --lr 0.002 -> 0.001, --max-steps 2 -> 3, --grad-clip 1.0 -> 0.5, "
            f"--data {corpus!r} -> {moved!r} (the same content)") in out
    data = sf.load(ckpt(saved_run, 3))["data"]
    assert data["source"] == moved and len(data["vocab_sha256"]) == 64 and data["vocab_size"] == 25
