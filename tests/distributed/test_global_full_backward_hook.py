"""``register_full_backward_hook`` on a module run on global tensors, in 2 MPI ranks: it
ran into "mixes global tensors with a local tensor ... that requires grad" (the hook's
pass-through node made the input local); now the hooks see each rank's local gradients,
equal to the single-process ones (the rank's rows for a split input)."""

import pytest

from shardflow.testing.mpi import run_program


@pytest.mark.parametrize("sbp", ["b", "s0"])
def test_full_backward_hook_on_global_tensors_matches_one_process(sbp):
    res = run_program("tests.distributed.programs.global_full_backward_hook", n=2, args=[sbp], timeout=90)
    res.check()
    assert res.stdout.count(f"full backward hook on global tensors {sbp} ok") == 2, res.stdout
