"""The test side of programs/several.py: several 2-rank programs of tests/host_cuda/programs
in one launch, and each test's check that its own program passed on both ranks."""

from shardflow.testing.mpi import MPIResult, run_program


def run_several(names: list, n: int = 2, timeout: float = 240) -> MPIResult:
    """One launch of ``n`` ranks running the programs ``names`` one after another."""
    return run_program("tests.host_cuda.programs.several", n=n, timeout=timeout, args=names)


def passed(job: MPIResult, name: str, n: int = 2) -> str:
    """The job's output, once ``name`` is seen to have passed on all ``n`` ranks (a program
    that failed aborted the job: its traceback is in the output)."""
    assert job.output.count(f"several: passed {name}\n") == n, f"{name} did not pass on {n} ranks:\n{job.output}"
    return job.output
