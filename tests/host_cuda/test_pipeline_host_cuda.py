"""Pipeline parallelism on ``device="cuda"`` in real ranks, without a GPU: every rank installs
CuPy's host stand-in and the fake NCCL, which carries NCCL's calls over MPI on the host memory
behind the pointers (``tests.doubles.host_cuda.install()``). The stages' activations and gradients are device arrays sent over the
NCCL communicator's send/recv (only the small shape headers travel over MPI as host arrays),
and the run must train exactly like one process on the CPU.

The two 2-rank programs share one launch (programs/several.py); the main job's one-process
CPU reference is trained once for the three layouts.
"""

import numpy as np
import pytest

from shardflow.cli.train import main
from shardflow.testing.mpi import run_program

from ._shared_launch import passed, run_several

pytestmark = pytest.mark.mpi

PROGRAMS = "tests.host_cuda.programs."


@pytest.fixture(scope="module")
def two_rank_job():
    return run_several(["pipeline_stages_on_cuda", "interleaved_1f1b_large_activations_on_cuda"])


def test_pipeline_stages_on_host_cuda_send_device_arrays_over_nccl(two_rank_job):
    passed(two_rank_job, "pipeline_stages_on_cuda")


def test_the_two_rank_job_ended_cleanly(two_rank_job):
    two_rank_job.check()


# 2 layers (1 per stage), a small --grad-clip so that the global norm across stages is used,
# and checkpoints (the whole model and optimizer state gathered from the stages)
FLAGS = ["--max-steps", "3", "--n-layer", "2", "--n-embd", "32", "--n-head", "2", "--block-size", "16",
         "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "2", "--log-interval", "1",
         "--ckpt-interval", "3", "--sample-tokens", "5", "--no-progress", "--num-workers", "0",
         "--max-corpus-bytes", "20000", "--warmup-steps", "0", "--lr", "1e-2", "--grad-clip", "0.5"]


def _losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return [float(r[1]) for r in rows if r[1]], [float(r[2]) for r in rows if r[2]]


@pytest.fixture(scope="module")
def one_cpu_process(tmp_path_factory):
    """The corpus and the run of the same FLAGS in this process on the CPU: the reference of
    every layout, trained once for all of them."""
    tmp = tmp_path_factory.mktemp("pp_host_cuda")
    corpus = tmp / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    one = tmp / "one"
    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    return corpus, one


@pytest.mark.parametrize("n, layout", [(2, ["--pp", "2"]), (4, ["--pp", "2", "--dp", "2"]),
                                      (4, ["--pp", "2", "--tp", "2"])],
                         ids=["pp2", "pp2dp2", "pp2tp2"])
def test_train_gpt_pp_on_host_cuda_equals_one_cpu_process(tmp_path, capsys, one_cpu_process, n, layout):
    import shardflow as sf

    corpus, one = one_cpu_process
    capsys.readouterr()
    pp = tmp_path / "pp"
    res = run_program(PROGRAMS + "train_cli_on_cuda", n=n, timeout=300,
                      args=["gpt", "--device", "cuda", *layout, "--data", str(corpus), "--out",
                            str(pp), *FLAGS]).check()
    assert "NCCL calls" in res.output and "--- sample" in res.output
    (t2, v2), (t1, v1) = _losses(pp / "metrics.csv"), _losses(one / "metrics.csv")
    assert len(t2) == 3 and len(v2) == 3
    np.testing.assert_allclose(t2, t1, rtol=0, atol=5e-5)
    np.testing.assert_allclose(v2, v1, rtol=0, atol=5e-5)
    s2, s1 = sf.load(pp / "ckpt_0000003.safetensors"), sf.load(one / "ckpt_0000003.safetensors")
    assert sorted(s2["model"]) == sorted(s1["model"])
    for k in s1["model"]:  # every stage's parameters, gathered
        np.testing.assert_allclose(s2["model"][k].numpy(), s1["model"][k].numpy(), atol=1e-4, err_msg=k)
    o2, o1 = s2["optimizer"]["state"], s1["optimizer"]["state"]
    assert sorted(o2) == sorted(o1)
    for i in o1:  # and every parameter's AdamW state
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(o2[i][key].numpy(), o1[i][key].numpy(), atol=1e-5, err_msg=f"{i} {key}")


def test_interleaved_1f1b_on_host_cuda_with_large_activations_does_not_deadlock(two_rank_job):
    """Interleaved 1F1B (2 stages per rank) with activations above MPI's eager limit: each
    timeline step's sends and receives are one NCCL group, so no rank's send waits on a peer
    that is itself sending; outputs and gradients equal one CPU process."""
    passed(two_rank_job, "interleaved_1f1b_large_activations_on_cuda")
