"""The background MPI progress thread (``shardflow/comm/mpi_progress.py``) on 2 and 3 ranks:
an async all_reduce completes while the main thread sleeps; the main thread's collectives
and send/recv stay correct while the thread polls; DDP holds it only during backward, with
the gradients of one process; a program that ends with it held exits normally (rank
program ``programs/background_progress.py``)."""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("n", [2, 3])
def test_background_progress(n):
    res = run_program("tests.distributed.programs.background_progress", n=n, timeout=120).check()
    for check in ("alone", "interleaved", "ddp", "exit_held"):
        for rank in range(n):
            assert f"PASS {check} {rank}" in res.stdout, res.output
