"""``shardflow.testing.mpi.run_program``, the runner of the multi-rank test programs: a failing
rank's assertion reaches the test with its rank and values (pytest's assertion rewriting in
the ranks), and ``check()`` fails unless every rank's ``main()`` returned."""

import time

import pytest

from shardflow.testing.mpi import launch_cli, program_command, rank_errors, run_program

pytestmark = pytest.mark.mpi

PROGRAM = "tests.distributed.programs.runner_fails_on_one_rank"


def _failure(res) -> str:
    with pytest.raises(AssertionError) as info:
        res.check()
    return str(info.value)


def test_a_passing_program_passes_on_every_rank():
    res = run_program(PROGRAM, n=2, args=["pass"], timeout=60).check()
    assert res.passed_ranks() == [0, 1]


@pytest.mark.parametrize("when", ["assert", "before_init"])
def test_a_failing_assert_shows_its_rank_and_values(when):
    # before_init under raw mpiexec: rank 0 mostly waits in MPI_Init for the rank that died
    # before it until the timeout (Open MPI's behaviour; `shardflow run` ends such a job in
    # about 2 s), and the report is the same either way: a short timeout (CI time: it took 61 s,
    # then 13 s with 12). Rank 1's report is out 1-3 s after the start (measured on the 2-core
    # machine), so 6 s leaves it twice that
    message = _failure(run_program(PROGRAM, n=2, args=[when], timeout=60 if when == "assert" else 6))
    assert "--- rank 1 raised ---" in message, message
    block = message[message.index("--- rank 1 raised ---"):]
    assert "--- rank 0 raised ---" not in message, message
    assert "runner_fails_on_one_rank.py" in block, message
    if when == "assert":  # shardflow's excepthook reported it and aborted the job
        assert "assert [0, 2, 4] == [0, 1, 2]" in block, message
        assert "rank 1 raised an uncaught AssertionError" in block, message
    else:  # no world yet: the runner prints the traceback with the rank itself
        assert "assert [1.0, 2.0] == [1.0, 3.0]" in block, message
        assert "the program raised on rank 1" in block, message
    assert "rank_program.py" not in block, message  # the traceback starts at the program


def test_rank_errors_reads_a_rank_line_that_the_abort_banner_shifted():
    # prterun's MPI_ABORT banner can land amid a rank's lines and leave a blank before one
    stderr = ("[rank 0] warming up\n"
              "-----\nMPI_ABORT was invoked on rank 1\n-----\n"
              " [rank 1] Traceback (most recent call last):\n"
              "[rank 1]   File \"prog.py\", line 3, in main\n"
              "[rank 1] AssertionError: boom\n")
    assert rank_errors(stderr) == ("--- rank 1 raised ---\nTraceback (most recent call last):\n"
                                   "  File \"prog.py\", line 3, in main\nAssertionError: boom\n")


def test_a_rank_that_leaves_main_early_fails_the_check():
    res = run_program(PROGRAM, n=2, args=["early_exit"], timeout=60)
    assert res.returncode == 0, res.output
    assert res.passed_ranks() == [0], res.output
    assert "main() did not return on rank(s) [1]" in _failure(res)


def test_program_command_runs_one_plain_process():
    import subprocess

    res = subprocess.run(program_command(PROGRAM, ["pass"]), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "main() passed on rank 0" in res.stdout, res.stdout


def test_shardflow_run_ends_a_job_whose_rank_died_before_init_promptly(tmp_path):
    """The launcher, unlike raw mpiexec above, ends the job as soon as a rank exits non-zero,
    though the other rank waits in init_process_group for it (bounded, never a hang)."""
    prog = tmp_path / "dies_before_init.py"
    prog.write_text("import shardflow.distributed as dist\nfrom shardflow import _config\n"
                    "if _config.launch_info().rank == 1:\n    raise ValueError('rank 1 fails before init')\n"
                    "dist.init_process_group()\ndist.barrier()\n")
    start = time.monotonic()
    res = launch_cli(["-n", "2", str(prog)], timeout=60)
    assert time.monotonic() - start < 30 and res.returncode != 0, res.output
    assert "first failing rank: 1" in res.output and "rank 1 fails before init" in res.output, res.output
