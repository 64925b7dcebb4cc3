"""Module.load_state_dict into sharded (global) parameters: logical shapes, refusals before any
change, layouts kept (tests/distributed/programs/load_state_dict_into_sharded.py, 2 ranks)."""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi


def test_load_state_dict_into_a_sharded_model():
    run_program("tests.distributed.programs.load_state_dict_into_sharded", n=2, timeout=180).check()
