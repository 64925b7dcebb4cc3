"""Global tensors on real ranks: one test body over op x placement x sbp, against one process.

Every rank draws the same full inputs, computes the single-process result with plain
tensors, then lays the inputs out with each sbp combination, runs the same function on
global tensors and compares the output (gathered with ``.numpy()``) and every input's
gradient (float32, 1e-5). Meshes: 1-D of 2 ranks, 1-D of 3 ranks (uneven splits: sizes 5
and 7 over 3), and 2x2. A layout the rule refuses (a split dim smaller than its mesh
dimension) must be refused with that reason, and is counted apart from the layouts that ran.
Boxing is checked for every (src, dst) pair with gradients. The rank programs are in
``tests/distributed/programs/global_*.py`` (the table in ``_global_cases.py``).

The programs of one world size share one launch (``_several.py``: ~1.2 s of rank start-up
each saved); each test asserts that its own program passed on every rank.
"""

import pytest

from ._several import Launches, spec

pytestmark = pytest.mark.mpi

OPS_1D, OPS_2X2 = spec("global_ops_match_one_process", "1d"), spec("global_ops_match_one_process", "2x2")
BOXING = {2: spec("global_boxing_pairs", "none", "6,8"), 3: spec("global_boxing_pairs", "none", "5,7"),
          4: spec("global_boxing_pairs", "2x2", "5,7")}
GPT = [(1, 2, False), (2, 1, False), (2, 2, False), (1, 2, True), (2, 2, True)]
A2A, ERRORS = spec("global_split_to_split_a2a"), spec("global_errors_before_collectives")
SEQ_PARALLEL, LOCAL_MAP = spec("global_sequence_parallel"), spec("global_local_map")


def gpt_spec(dp, tp, vocab):
    return spec("global_gpt_tensor_data_parallel", dp, tp, int(vocab))


GROUPS = {
    2: [OPS_1D, BOXING[2], A2A, ERRORS, SEQ_PARALLEL, LOCAL_MAP]
       + [gpt_spec(*c) for c in GPT if c[0] * c[1] == 2],
    3: [OPS_1D, BOXING[3]],
    4: [OPS_2X2, BOXING[4]] + [gpt_spec(*c) for c in GPT if c[0] * c[1] == 4],
}


@pytest.fixture(scope="module")
def launches():
    return Launches(GROUPS, timeout={2: 600, 3: 400, 4: 600})


def _ran(stdout):
    """The layouts run on every rank (``cases ran N refused M of K cases``)."""
    runs = [int(line.split()[2]) for line in stdout.splitlines() if line.startswith("cases ran ")]
    assert runs and len(set(runs)) == 1, stdout
    return runs[0]


@pytest.mark.parametrize("n", [2, 3])
def test_ops_on_1d_meshes_match_one_process(launches, n):
    assert _ran(launches.check(n, OPS_1D)) > 0


def test_ops_on_2x2_mesh_match_one_process(launches):
    assert _ran(launches.check(4, OPS_2X2)) > 0


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_boxing_pair_with_gradients(launches, n):
    assert "pairs" in launches.check(n, BOXING[n])


def test_split_to_split_is_one_all_to_all(launches):
    launches.check(2, A2A)


@pytest.mark.parametrize("dp,tp,vocab", GPT)
def test_gpt_mini_tensor_and_data_parallel_match_one_process(launches, dp, tp, vocab):
    launches.check(dp * tp, gpt_spec(dp, tp, vocab))


def test_errors_are_raised_before_any_collective(launches):
    launches.check(2, ERRORS)


def test_sequence_parallel_block_gathers_and_reduce_scatters(launches):
    """LayerNorm on sequence shards, Colwise(input S(1)) -> Rowwise(output S(1)): forward is
    one all_gather and one reduce_scatter (Megatron's sequence parallelism), equal to one process."""
    launches.check(2, SEQ_PARALLEL)


def test_local_map_runs_on_shards(launches):
    launches.check(2, LOCAL_MAP)
