"""DDP and collectives with complex tensors on 2 real ranks against torch (the program's
docstring: ``tests/complex/programs/ddp_complex.py``)."""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


def test_complex_collectives_and_ddp_match_one_torch_process():
    run_program("tests.complex.programs.ddp_complex", n=2, timeout=120).check()
