"""Global tensors on real ranks: one test body over op x placement x sbp, against one process.

Every rank draws the same full inputs, computes the single-process result with plain
tensors, then lays the inputs out with each sbp combination, runs the same function on
global tensors and compares the output (gathered with ``.numpy()``) and every input's
gradient (float32, 1e-5). Meshes: 1-D of 2 ranks, 1-D of 3 ranks (uneven splits: sizes 5
and 7 over 3), and 2x2. A layout the rule refuses (a split dim smaller than its mesh
dimension) must be refused with that reason, and is counted apart from the layouts that ran.
Boxing is checked for every (src, dst) pair with gradients. The rank programs are in
``tests/distributed/programs/global_*.py`` (the table in ``_global_cases.py``).
"""

import pytest

from shardflow.testing.mpi import run_program

pytestmark = pytest.mark.mpi

PROGRAMS = "tests.distributed.programs."


def _ran(stdout):
    """The layouts run on every rank (``cases ran N refused M of K cases``)."""
    runs = [int(line.split()[2]) for line in stdout.splitlines() if line.startswith("cases ran ")]
    assert runs and len(set(runs)) == 1, stdout
    return runs[0]


@pytest.mark.parametrize("n", [2, 3])
def test_ops_on_1d_meshes_match_one_process(n):
    res = run_program(PROGRAMS + "global_ops_match_one_process", n=n, timeout=240,
                      args=["1d"]).check()
    assert _ran(res.stdout) > 0


def test_ops_on_2x2_mesh_match_one_process():
    res = run_program(PROGRAMS + "global_ops_match_one_process", n=4, timeout=300,
                      args=["2x2"]).check()
    assert _ran(res.stdout) > 0


@pytest.mark.parametrize("n,mesh,shape", [(2, "none", "6,8"), (3, "none", "5,7"),
                                          (4, "2x2", "5,7")])
def test_every_boxing_pair_with_gradients(n, mesh, shape):
    res = run_program(PROGRAMS + "global_boxing_pairs", n=n, timeout=240,
                      args=[mesh, shape]).check()
    assert "pairs" in res.stdout


def test_split_to_split_is_one_all_to_all():
    run_program(PROGRAMS + "global_split_to_split_a2a", n=2, timeout=120).check()


@pytest.mark.parametrize("dp,tp,vocab", [(1, 2, False), (2, 1, False), (2, 2, False), (1, 2, True),
                                         (2, 2, True)])
def test_gpt_mini_tensor_and_data_parallel_match_one_process(dp, tp, vocab):
    run_program(PROGRAMS + "global_gpt_tensor_data_parallel", n=dp * tp, timeout=300,
                args=[dp, tp, int(vocab)]).check()


def test_errors_are_raised_before_any_collective():
    run_program(PROGRAMS + "global_errors_before_collectives", n=2, timeout=120).check()


def test_sequence_parallel_block_gathers_and_reduce_scatters():
    """LayerNorm on sequence shards, Colwise(input S(1)) -> Rowwise(output S(1)): forward is
    one all_gather and one reduce_scatter (Megatron's sequence parallelism), equal to one process."""
    run_program(PROGRAMS + "global_sequence_parallel", n=2, timeout=120).check()


def test_local_map_runs_on_shards():
    run_program(PROGRAMS + "global_local_map", n=2, timeout=120).check()
