"""A fully_shard-ed nn.Linear reduces its weight gradient in row blocks as it computes it
(tests/distributed/programs/fsdp_streamed_linear.py): results equal one process on 2 and 3
ranks, the weight gradient goes through one reduce-scatter per block (it never exists
whole), the gathered weight is freed before its gradient is made, and the fallbacks (a
Linear used twice, gradient accumulation, uneven rows) give the same results."""

import pytest

from shardflow.testing.mpi import run_program


@pytest.mark.mpi
@pytest.mark.parametrize("n", [2, 3])
def test_streamed_linear_weight_gradient_equals_one_process(n):
    run_program("tests.distributed.programs.fsdp_streamed_linear", n=n, timeout=180).check()
