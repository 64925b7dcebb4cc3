"""DistributedDataParallel / SyncBatchNorm on real ranks vs a single-process PyTorch reference.

Every rank can rebuild every rank's batch from its seed, so each rank computes the
reference itself with PyTorch: DDP averages the per-rank gradients with equal weight, so
the reference loss is ``sum_r mean_loss(batch_r) / world`` (the full-batch mean loss when
the batches are equal). Batches are uneven (rank r has 3 + 2r rows) except for the
SyncBatchNorm case, whose reference is BatchNorm on the full batch.
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n,checks", [(2, ["plain", "view", "syncbn", "unused"]),
                                      (3, ["plain", "no_sync", "syncbn"])])
def test_ddp_and_sync_batchnorm_match_single_process(n, checks):
    """One job per world size runs the checks in order (tests/distributed/programs/
    ddp_matches_single_process.py): DDP plain / gradient_as_bucket_view / no_sync,
    SyncBatchNorm, find_unused_parameters and its error."""
    run_program("tests.distributed.programs.ddp_matches_single_process", n=n, timeout=150,
                args=checks).check()


def test_ddp_world_of_one():
    import numpy as np

    import shardflow as sf
    import shardflow.nn as nn
    import shardflow.nn.functional as F
    from shardflow.nn.parallel import DistributedDataParallel as DDP

    model = nn.Linear(4, 2)
    ddp = DDP(model, process_group=__import__("shardflow").comm.LocalCommunicator())
    x, y = sf.randn(5, 4), sf.randn(5, 2)
    F.mse_loss(ddp(x), y).backward()
    ref = nn.Linear(4, 2)
    ref.load_state_dict(model.state_dict())
    F.mse_loss(ref(x), y).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert np.allclose(p.grad.numpy(), q.grad.numpy())
    assert list(ddp.state_dict()) == ["module." + k for k in model.state_dict()]
