"""Data parallel on ``device="cuda"`` in real ranks, without a GPU: every rank installs CuPy's
host stand-in and the fake NCCL, which carries NCCL's calls over MPI on the host memory behind
the pointers (``tests.doubles.host_cuda.install()``). ``init_process_group("nccl")`` then builds the NCCL communicator (the one a GPU
uses: signature checks, packing, streams and events through the stand-in), DDP's gradient
buckets go through it, and the result must equal one process on the CPU; so must the main
job on 2 ranks with DDP, ZeRO-3 and tensor parallelism (a (1, 2) mesh: NCCL subgroups).

DDP's and SyncBatchNorm's programs share one launch (programs/several.py); the main job's
one-process CPU reference is trained once for the three layouts.
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
    return run_several(["ddp_over_nccl", "sync_batchnorm_on_cuda"])


def test_ddp_over_nccl_on_host_cuda_equals_one_cpu_process(two_rank_job):
    passed(two_rank_job, "ddp_over_nccl")


def test_the_two_rank_job_ended_cleanly(two_rank_job):
    two_rank_job.check()


FLAGS = ["--max-steps", "3", "--n-layer", "1", "--n-embd", "32", "--n-head", "2", "--block-size", "16",
         "--batch-size", "8", "--eval-iters", "1", "--eval-interval", "3", "--log-interval", "1",
         "--sample-tokens", "5", "--no-progress", "--num-workers", "0", "--max-corpus-bytes", "20000"]


def _train_losses(path):
    rows = [r.split(",") for r in open(path).read().splitlines()[1:]]
    return [float(r[1]) for r in rows if r[1]]


@pytest.fixture(scope="module")
def one_cpu_process(tmp_path_factory):
    """The corpus and the run of the same FLAGS in this process on the CPU: the reference of
    every layout, trained once for all of them."""
    tmp = tmp_path_factory.mktemp("train_host_cuda")
    corpus = tmp / "c"
    corpus.mkdir()
    (corpus / "a.py").write_text("def f(x):\n    return x + 1\n" * 300)
    one = tmp / "one"
    assert main(["gpt", "--data", str(corpus), "--out", str(one), *FLAGS]) == 0
    return corpus, one


@pytest.mark.parametrize("layout", [[], ["--zero", "3"], ["--tp", "2"]], ids=["ddp", "zero3", "tp2"])
def test_train_gpt_cuda_on_two_ranks_equals_one_cpu_process(tmp_path, capsys, one_cpu_process, layout):
    corpus, one = one_cpu_process
    capsys.readouterr()
    two = tmp_path / "two"
    run_program(PROGRAMS + "train_cli_on_cuda", n=2, timeout=240,
                args=["gpt", "--device", "cuda", *layout, "--data", str(corpus), "--out", str(two),
                      *FLAGS]).check()
    np.testing.assert_allclose(_train_losses(two / "metrics.csv"), _train_losses(one / "metrics.csv"),
                               rtol=0, atol=5e-5)


def test_sync_batchnorm_on_host_cuda_equals_batchnorm_on_the_global_batch(two_rank_job):
    passed(two_rank_job, "sync_batchnorm_on_cuda")
