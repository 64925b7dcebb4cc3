"""`shardflow train gpt --pp 2` (pipeline stages through shardflow.parallelize) trains exactly
like one process, alone and with --dp 2; its checkpoints hold the whole model and optimizer
(gathered from the stages) and resume on the same curve; the YAML `pp:` key works; a
combination parallelize refuses fails before anything is built, naming the fix."""

import re
import subprocess
import sys

import numpy as np
import pytest

import shardflow as sf
from shardflow.cli.train import ConfigError, main, resolve_config

# 4 layers (2 per stage); warmup 0 and lr 1e-2 so that steps move the parameters, and a
# small --grad-clip so that clipping by the global norm across stages is exercised
FLAGS = ["--max-steps", "4", "--n-layer", "4", "--n-embd", "32", "--n-head", "2", "--block-size", "16",
         "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "2", "--log-interval", "1",
         "--ckpt-interval", "2", "--keep-checkpoints", "10", "--sample-tokens", "5", "--no-progress",
         "--num-workers", "0", "--max-corpus-bytes", "20000", "--warmup-steps", "0", "--lr", "1e-2",
         "--grad-clip", "0.5"]


def _losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return [float(r[1]) for r in rows if r[1]], [float(r[2]) for r in rows if r[2]]


def _run(n, *args):
    cmd = [sys.executable, "-m", "shardflow.cli.main", "run", "-n", str(n), "shardflow", "train", "gpt", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    (d / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    return d


@pytest.fixture(scope="module")
def one_rank(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    assert main(["gpt", "--data", str(corpus), "--out", str(out), *FLAGS]) == 0
    return out


def _assert_same_training(out, ref, atol=1e-4):
    """Losses within 3e-5 (printed to 5 decimals) and every parameter and AdamW state within ``atol`` of one process.
    The pipeline sums micro-batch gradients in another order; AdamW divides each element's
    moment by its own root-mean-square, so an element whose gradient is near zero (a character
    the batch barely uses) can move by a visible fraction of lr = 1e-2 from rounding alone:
    2.9e-5 (0.3% of one step's lr) on one wte element was seen on one machine (OpenBLAS/Numba
    paths differ by CPU), and 7.5e-5 / 8.4e-5 on one c_proj element once the float32 AdamW step
    rounds as torch's (session 31), so 1e-4 = 1% of lr. A wrong pipeline is off by 1e-3 or more."""
    (t2, v2), (t1, v1) = _losses(out / "metrics.csv"), _losses(ref / "metrics.csv")
    assert len(t2) == 4 and len(v2) == 3
    # metrics.csv keeps 5 decimals: losses 1.1e-5 apart can read 2e-5 apart (2.34137/2.34139)
    np.testing.assert_allclose(t2, t1, rtol=0, atol=3e-5)
    np.testing.assert_allclose(v2, v1, rtol=0, atol=3e-5)
    s2, s1 = sf.load(out / "ckpt_0000004.safetensors"), sf.load(ref / "ckpt_0000004.safetensors")
    assert sorted(s2["model"]) == sorted(s1["model"])
    for k in s1["model"]:  # every stage's parameters, gathered: equal to one process's
        np.testing.assert_allclose(s2["model"][k].numpy(), s1["model"][k].numpy(), atol=atol, err_msg=k)
    o2, o1 = s2["optimizer"]["state"], s1["optimizer"]["state"]
    assert sorted(o2) == sorted(o1)
    for i in o1:  # and every parameter's AdamW state
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(o2[i][key].numpy(), o1[i][key].numpy(), atol=1e-5, err_msg=f"{i} {key}")


@pytest.fixture(scope="module")
def pp2_run(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("pp2")
    r = _run(2, "--pp", "2", "--data", str(corpus), "--out", str(out), *FLAGS)
    assert r.returncode == 0, r.stdout + r.stderr
    return out, r.stdout


@pytest.mark.mpi
def test_train_gpt_pp2_equals_one_rank(pp2_run, one_rank):
    out, stdout = pp2_run
    assert "parallel plan: dp=1 x tp=1 x pp=2 on 2 rank(s)" in stdout  # printed before step 1
    assert stdout.index("parallel plan") < stdout.index("step 1/4")
    assert "(pipeline: dp 1 x tp 1 x pp 2, 4 micro-batches of 2)" in stdout
    assert (out / "loss.png").exists() and "--- sample" in stdout
    _assert_same_training(out, one_rank)


@pytest.mark.mpi
def test_train_gpt_pp2_resumes_on_the_same_curve(pp2_run, corpus, one_rank, tmp_path):
    out, _ = pp2_run
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    for f in ("ckpt_0000002.safetensors", "metrics.csv"):
        (resumed / f).write_bytes((out / f).read_bytes())
    # resumed under the GPipe schedule: the same gradients as 1F1B, so the same curve
    r = _run(2, "--pp", "2", "--schedule", "gpipe", "--data", str(corpus), "--out", str(resumed),
             "--resume", *FLAGS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resumed from" in r.stdout and "at step 2" in r.stdout
    assert "GPipe schedule" in r.stdout and "1F1B schedule" not in r.stdout
    _assert_same_training(resumed, one_rank)  # steps 3, 4 and the evals as uninterrupted


@pytest.mark.mpi
def test_train_gpt_pp2_dp2_on_four_ranks_equals_one_rank(corpus, one_rank, tmp_path, capsys):
    out = tmp_path / "pp2dp2"
    r = _run(4, "--pp", "2", "--dp", "2", "--data", str(corpus), "--out", str(out), *FLAGS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "parallel plan: dp=2 x tp=1 x pp=2 on 4 rank(s)" in r.stdout
    # 4 ranks on 2 cores run 1 BLAS / kernel thread each, the reference 2: float32 rounding
    # differs (one process alone moves by 4e-5 between 1 and 2 threads after these 4 steps),
    # and AdamW at lr 1e-2 turns noise-level gradient elements into lr-sized steps. A wrong
    # reduction or a lost micro-batch moves parameters by ~1e-2.
    _assert_same_training(out, one_rank, atol=1e-4)

    # its checkpoint holds whole tensors: it resumes on one process, on the same curve
    resumed = tmp_path / "one"
    resumed.mkdir()
    (resumed / "ckpt_0000002.safetensors").write_bytes((out / "ckpt_0000002.safetensors").read_bytes())
    assert main(["gpt", "--data", str(corpus), "--out", str(resumed), "--resume", *FLAGS]) == 0
    capsys.readouterr()
    s3, s1 = sf.load(resumed / "ckpt_0000004.safetensors"), sf.load(one_rank / "ckpt_0000004.safetensors")
    for k in s1["model"]:
        np.testing.assert_allclose(s3["model"][k].numpy(), s1["model"][k].numpy(), atol=1e-4, err_msg=k)


def test_yaml_pp_key(tmp_path):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("pp: 2\nmicrobatches: 2\nn_layer: 4\nbatch_size: 8\n")
    cfg = resolve_config(["gpt", "--config", str(cfg_file)])
    assert (cfg.pp, cfg.microbatches, cfg.n_layer) == (2, 2, 4)
    assert resolve_config(["gpt", "--config", str(cfg_file), "--pp", "4"]).pp == 4  # flags win


@pytest.mark.parametrize("flags, message", [
    (["--pp", "3", "--n-layer", "4"], r"pp=3 does not divide the model's 4 layers; choose pp among \[1, 2, 4\]"),
    (["--pp", "2", "--n-layer", "4", "--batch-size", "6"], r"global batch of 6 does not split into dp=1 replicas x 4 micro-batches"),
    (["--pp", "2", "--n-layer", "4", "--zero", "1"], r"zero with tp or pp is not wired"),
])
def test_bad_pipeline_config_is_refused_before_anything_is_built(tmp_path, capsys, flags, message):
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text("".join(f"{k.lstrip('-').replace('-', '_')}: {v}\n" for k, v in zip(flags[::2], flags[1::2])))
    with pytest.raises(ConfigError, match=message):
        resolve_config(["gpt", "--config", str(cfg_file), "--out", str(tmp_path / "x")])
    assert main(["gpt", *flags, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and f"--pp {flags[1]} " in err, err  # names the flags
    assert not (tmp_path / "x").exists()


@pytest.mark.mpi
def test_train_gpt_pp2_tp2_on_four_ranks_equals_one_rank(corpus, one_rank, tmp_path, capsys):
    out = tmp_path / "pp2tp2"
    r = _run(4, "--pp", "2", "--tp", "2", "--data", str(corpus), "--out", str(out), *FLAGS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "parallel plan: dp=1 x tp=2 x pp=2 on 4 rank(s)" in r.stdout
    assert "(pipeline: dp 1 x tp 2 x pp 2, 4 micro-batches of 2)" in r.stdout
    assert "--- sample" in r.stdout
    # float32 all-reduces in another order, amplified a little by Adam on tiny gradients
    _assert_same_training(out, one_rank, atol=1e-4)

    # the gathered (whole-tensor) checkpoint resumes on one process, on the same curve
    resumed = tmp_path / "one"
    resumed.mkdir()
    (resumed / "ckpt_0000002.safetensors").write_bytes((out / "ckpt_0000002.safetensors").read_bytes())
    assert main(["gpt", "--data", str(corpus), "--out", str(resumed), "--resume", *FLAGS]) == 0
    capsys.readouterr()
    np.testing.assert_allclose(_losses(resumed / "metrics.csv")[0][-2:], _losses(one_rank / "metrics.csv")[0][-2:],
                               rtol=0, atol=3e-5)


def test_pp_with_tp_follows_parallelize(tmp_path, capsys):
    """Refused with parallelize's own message while parallelize refuses tp x pp; accepted
    by the CLI's checks once it does not."""
    from shardflow.distributed.parallel_config import validate_parallel_config

    flags = ["gpt", "--pp", "2", "--tp", "2", "--n-layer", "4", "--out", str(tmp_path / "x")]
    try:
        validate_parallel_config(4, 1, 2, 2, 0, 4, 4, 32, 4)
    except NotImplementedError as e:
        assert main(flags) == 2
        assert str(e).removeprefix("parallelize: ") in capsys.readouterr().err
        assert not (tmp_path / "x").exists()
    else:
        assert resolve_config(flags).tp == 2
    assert main(["gpt", "--microbatches", "4", "--out", str(tmp_path / "y")]) == 2
    assert "--microbatches: got 4; fix: micro-batches are for pipeline stages" in capsys.readouterr().err


@pytest.mark.mpi
def test_pp_times_dp_must_match_the_world_before_anything_is_built(tmp_path):
    r = _run(2, "--pp", "2", "--dp", "2", "--out", str(tmp_path / "x"), *FLAGS)
    assert r.returncode != 0
    assert "dp x tp x pp = 2 x 1 x 2 = 4, but the job has 2 rank(s); launch with `shardflow run -n 4`" \
        in r.stdout + r.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.mpi
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy overflow in the diverging model
def test_pp_divergence_stops_at_the_same_step_as_one_rank(corpus, tmp_path, capsys):
    flags = [*FLAGS[:FLAGS.index("--max-steps")], *FLAGS[FLAGS.index("--max-steps") + 2:]]
    flags += ["--max-steps", "30", "--lr", "1e6", "--ckpt-interval", "1", "--keep-checkpoints", "1",
              "--eval-interval", "100"]
    assert main(["gpt", "--data", str(corpus), "--out", str(tmp_path / "one"), *flags]) == 1
    step = int(capsys.readouterr().err.split("non-finite at step ")[1].split(" ")[0])
    out = tmp_path / "pp"
    r = _run(2, "--pp", "2", "--data", str(corpus), "--out", str(out), *flags)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"the training loss or gradient became non-finite at step {step} " in r.stderr  # all ranks agreed
    assert sorted(f for f in out.iterdir() if f.name.startswith("ckpt_")) == [out / f"ckpt_{step - 1:07d}.safetensors"]
    assert all(np.isfinite(v.numpy()).all() for v in sf.load(out / f"ckpt_{step - 1:07d}.safetensors")["model"].values())
