"""FSDPModule.set_modules_to_forward_prefetch / set_modules_to_backward_prefetch on 2 ranks
(tests/distributed/programs/fsdp_explicit_prefetch.py): the named units' all-gathers start
early, results equal the run without the hints, non-FSDP modules are refused."""

from shardflow.testing.mpi import run_program


def test_explicit_prefetch_starts_the_named_units_and_changes_no_result():
    run_program("tests.distributed.programs.fsdp_explicit_prefetch", n=2, timeout=180).check()
