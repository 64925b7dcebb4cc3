"""The Horovod-style API on real ranks: collectives vs NumPy, DistributedOptimizer vs PyTorch."""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n,runs", [(2, ["none:1", "fp16:1"]), (3, ["none:2"])])
def test_horovod_api_and_optimizer(n, runs):
    """``runs``: COMPRESSION:BACKWARD_PASSES_PER_STEP, each a fresh DistributedOptimizer."""
    run_program("tests.distributed.programs.horovod_api_and_optimizer", n=n, timeout=90,
                args=runs).check()
