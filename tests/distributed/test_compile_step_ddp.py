"""``shardflow.compile_step`` on a DistributedDataParallel model, in real ranks: the
compiled step against the eager DDP step of a twin model (docs/KERNELS.md, compile_step).

Each rank holds two DDP models with the same weights: one stepped eagerly, one through
``compile_step``. Every step both must give the same loss, the same averaged gradients and
the same parameters (float32, 1e-5), and the compiled model must be identical on every rank.
Batches are uneven (rank r has 3 + 2r rows) and change size at step 3 on rank 1 only, so that
rank compiles a second plan while rank 0 replays: their collectives must still match. The
buckets are small (several per model); "module" compiles ``ddp.module`` (DDP's hooks on its
parameters, found through them, and no DDP forward), and a communication hook records, for each bucket
launch, how many parameters still had no gradient: the first bucket must start inside the
backward (before the first layer's gradient exists), as eager DDP starts it.
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


def test_compiled_ddp_step_equals_eager_ddp():
    """One job runs the five variants in order (fresh models each): plain, unused, view,
    hook, module."""
    run_program("tests.distributed.programs.compile_step_ddp_equals_eager", n=2, timeout=180,
                args=["plain", "unused", "view", "hook", "module"]).check()
