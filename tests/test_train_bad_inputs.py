"""Bad inputs to `shardflow train` / `shardflow run` end in one line and exit code 2 before
anything starts: YAML values of the wrong type, malformed YAML, non-finite flags, unusable
environment variables (issue 25, gap 1). Each case failed on the code before it with a
traceback (exit 1) or was taken silently."""

import pytest

from shardflow.cli import run as run_cli
from shardflow.cli.train import main


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.py").write_text("\n".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(60)))
    return d


def tiny(corpus):
    """A run of one step on a small model: the old code, which took these inputs, ends fast."""
    return ["--data", str(corpus), "--max-steps", "1", "--n-layer", "1", "--n-embd", "16",
            "--n-head", "2", "--block-size", "8", "--batch-size", "2", "--eval-iters", "1",
            "--sample-tokens", "2", "--no-progress", "--num-workers", "0"]


def _refused(capsys, argv, out_dir, needle):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err  # one line, no traceback
    assert lines[0].startswith("shardflow train: error: ")
    assert needle in lines[0], lines[0]
    assert not out_dir.exists()  # refused before anything was written
    return lines[0]


@pytest.mark.parametrize("yaml_text,needle", [
    ('warmup_steps: "ten"', "warmup_steps: got 'ten' (str); allowed: an integer"),
    ('grad_clip: "x"', "grad_clip: got 'x' (str); allowed: a finite number"),
    ('seed: "a"', "seed: got 'a' (str); allowed: an integer"),
    ('weight_decay: "0.1"', "weight_decay: got '0.1' (str); allowed: a finite number"),
    ('num_workers: "2"', "num_workers: got '2' (str); allowed: an integer"),
    ('dropout: "0.1"', "dropout: got '0.1' (str); allowed: a finite number"),
    ("max_steps: true", "max_steps: got True (bool); allowed: an integer"),
    ("max_steps: 10.5", "max_steps: got 10.5 (float); allowed: an integer"),
    ("lr: .inf", "lr: got inf (float); allowed: a finite number"),
    ("max_corpus_bytes: abc", "max_corpus_bytes: got 'abc' (str); allowed: an integer or null"),
    ("hidden: [128, x]", "hidden: got [128, 'x'] (list); allowed: a list of positive integers"),
    ("compile: 1", "compile: got 1 (int); allowed: true or false"),
    ("a: [b", "is not valid YAML at line 2, column 1: expected ',' or ']'"),
])
def test_wrong_yaml_values_are_one_line_naming_the_key(tmp_path, capsys, corpus, yaml_text, needle):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml_text + "\n")
    line = _refused(capsys, ["gpt", "--config", str(cfg), "--out", str(tmp_path / "o"),
                             *tiny(corpus)],
                    tmp_path / "o", needle)
    assert str(cfg) in line  # names the file the key came from


@pytest.mark.parametrize("flag,value,needle", [
    ("--lr", "inf", "--lr: got inf (float); allowed: a finite number"),
    ("--lr", "nan", "--lr: got nan (float); allowed: a finite number"),
    ("--grad-clip=-inf", None, "--grad-clip: got -inf (float); allowed: a finite number"),
    ("--weight-decay", "-1", "--weight-decay: got -1.0; fix: use 0 (off) or a positive number"),
    ("--seed", "-3", "--seed: got -3; fix: use an integer in [0, 2**63)"),
    ("--max-corpus-bytes", "0", "--max-corpus-bytes: got 0; fix: use a positive number of bytes"),
])
def test_impossible_flag_values_are_refused(tmp_path, capsys, corpus, flag, value, needle):
    argv = [flag] if value is None else [flag, value]
    _refused(capsys, ["gpt", "--out", str(tmp_path / "o"), *tiny(corpus), *argv], tmp_path / "o",
             needle)


ENV_CASES = [
    ("SHARDFLOW_COMM_TIMEOUT", "abc", "SHARDFLOW_COMM_TIMEOUT must be a number of seconds, got 'abc'"),
    ("SHARDFLOW_COMM_TIMEOUT", "-5", "positive, finite number of seconds, got '-5'"),
    ("SHARDFLOW_COMM_TIMEOUT", "0", "positive, finite number of seconds, got '0'"),
    ("SHARDFLOW_COMM_TIMEOUT", "inf", "positive, finite number of seconds, got 'inf'"),
    ("SHARDFLOW_DEBUG", "bogus", "SHARDFLOW_DEBUG='bogus': unknown flag(s) 'bogus'. Known flags: collectives"),
    ("SHARDFLOW_KERNEL_THREADS", "abc", "SHARDFLOW_KERNEL_THREADS='abc': expected an integer"),
    ("SHARDFLOW_KERNEL_THREADS", "0", "SHARDFLOW_KERNEL_THREADS=0: expected a positive number of threads"),
    ("SHARDFLOW_KERNELS", "bogus", "SHARDFLOW_KERNELS='bogus': expected one of auto, numba, numpy"),
    ("SHARDFLOW_RANK_PREFIX", "yes", "SHARDFLOW_RANK_PREFIX='yes': expected 1"),
]


@pytest.mark.parametrize("name,value,needle", ENV_CASES)
def test_bad_environment_values_stop_train_before_anything_starts(tmp_path, capsys, monkeypatch,
                                                                  corpus, name, value, needle):
    monkeypatch.setenv(name, value)
    _refused(capsys, ["gpt", "--out", str(tmp_path / "o"), *tiny(corpus)], tmp_path / "o", needle)


@pytest.mark.parametrize("name,value,needle", ENV_CASES)
def test_bad_environment_values_stop_the_launcher(capsys, monkeypatch, name, value, needle):
    monkeypatch.setenv(name, value)
    assert run_cli.main(["-n", "2", "--dry-run", "python", "-c", "pass"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("shardflow run: error: ") and needle in err and "\n" not in err


def test_too_little_text_for_the_block_size_is_a_config_error(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x\n" * 3)
    rc = main(["gpt", "--data", str(corpus), "--out", str(tmp_path / "o"), "--block-size", "8",
               "--n-layer", "1", "--n-embd", "16", "--n-head", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "the validation split of" in err and "--block-size 8" in err
