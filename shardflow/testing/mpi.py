"""Run test programs on N real ranks under mpiexec.

**Test programs** (how a multi-rank test is written): the ranks' code is a real module,
e.g. ``tests/distributed/programs/ddp_matches_single_process.py``, with a ``main(argv)`` that
holds the body (plain ``assert`` statements; arguments in ``argv``; nothing runs at import),
and the test calls

    run_program("tests.distributed.programs.ddp_matches_single_process", n=2,
                args=["plain", "view"]).check()

Every rank runs ``python -u -m shardflow.testing.rank_program MODULE ARGS...``, which imports
the module with pytest's assertion rewriting (a failing ``assert a == b`` shows both values),
calls ``main(ARGS)`` and prints ``shardflow.testing: main() passed on rank R`` when it
returns. :meth:`MPIResult.check` then wants exit code 0, no timeout and that line from every
rank; on failure it raises an AssertionError that starts with each failing rank's traceback
(the ``[rank R]`` lines: the assertion, its values and where it stands), followed by the
whole output. A test that expects the job to fail (failure handling) checks ``returncode``
and the output itself instead of calling ``check()``. :func:`program_command` is the same
command for one plain process (a program started without mpiexec).

``run_program``/``run_mpi``/``run_script`` start the job with the same mpiexec command
``shardflow run`` builds (root/oversubscribe flags, ``PYTHONPATH`` with shardflow's root,
which is also the root of the repository's ``tests`` package), in its own session, wait at
most ``timeout`` seconds, then kill every process left in that session and report whether
any survived. Output is captured raw (no rank prefixes: ranks prefix their own failure
messages with ``[rank R]``).

``run_mpi(code, n=2)`` runs Python source given as a string (written to a temporary
script): for tests whose point is an arbitrary script rather than a test program (and, for
now, the test files not yet converted to programs).
``run_script(path)`` runs an existing script. ``launch_cli(argv)`` runs ``shardflow run
ARGV`` (the launcher itself) in a subprocess the same way, to test the launcher end to end.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass

from ..comm.launcher import (
    LAUNCH_ATTEMPTS,
    build_mpiexec_command,
    kill_session,
    launcher_failed_to_start,
    rank_env,
    session_processes,
)
from .rank_program import PASSED


@dataclass
class MPIResult:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool
    leftover: list  # PIDs that were still alive after the job ended (before the cleanup)
    ranks: int = 0  # run_program: how many ranks must report that main() passed (0: no such check)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def passed_ranks(self) -> list[int]:
        """The ranks whose program's ``main()`` returned (run_program's per-rank line)."""
        head = PASSED + " "
        return sorted(int(line[len(head):]) for line in self.stdout.splitlines()
                      if line.startswith(head) and line[len(head):].isdigit())

    def check(self) -> MPIResult:
        """Raise AssertionError unless the job succeeded (exit code 0, no timeout, and for
        ``run_program`` every rank's ``main()`` returned): the failing ranks' tracebacks
        first, then the whole output."""
        __tracebackhide__ = True  # pytest: the failure is the job's, not this method's
        missing = sorted(set(range(self.ranks)) - set(self.passed_ranks()))
        if self.returncode != 0 or self.timed_out or missing:
            why = (f"MPI job failed (rc={self.returncode}, timed_out={self.timed_out}, "
                   f"{self.elapsed:.1f}s)")
            if missing and self.returncode == 0 and not self.timed_out:
                why += f": main() did not return on rank(s) {missing}"
            raise AssertionError(f"{why}\n{rank_errors(self.stderr)}--- stdout ---\n"
                                 f"{self.stdout}\n--- stderr ---\n{self.stderr}")
        return self


# Leading blanks are allowed: when a rank aborts, prterun's MPI_ABORT banner can reach stderr
# in the middle of the rank's own lines and leave a stray blank before the next one.
_PREFIX = re.compile(r"^\s*\[rank (\d+)\] ?(.*)$")


def rank_errors(stderr: str) -> str:
    """Each rank's last traceback in ``stderr`` (its ``[rank R]`` lines from the last
    ``Traceback`` on), one block per rank; empty when there is none."""
    lines: dict[int, list[str]] = {}
    for line in stderr.splitlines():
        m = _PREFIX.match(line)
        if m:
            lines.setdefault(int(m.group(1)), []).append(m.group(2))
    blocks = []
    for rank in sorted(lines):
        own = lines[rank]
        starts = [i for i, text in enumerate(own) if text.startswith("Traceback (most recent")]
        if starts:
            blocks.append(f"--- rank {rank} raised ---\n" + "\n".join(own[starts[-1]:]) + "\n")
    return "".join(blocks)


def _run(cmd, env, timeout) -> MPIResult:
    for attempt in range(1, LAUNCH_ATTEMPTS + 1):
        res = _run_once(cmd, env, timeout)
        startup_failed = not res.timed_out and launcher_failed_to_start(
            res.returncode, res.stderr, any_rank_started=bool(res.stdout))
        if not startup_failed or attempt == LAUNCH_ATTEMPTS:
            return res
        time.sleep(0.5 * attempt)
    raise AssertionError("unreachable")


def _run_once(cmd, env, timeout) -> MPIResult:
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_session(proc.pid, grace=1.0)
        out, err = proc.communicate()
    elapsed = time.monotonic() - start
    # mpiexec has exited: anything still in its session is an orphan
    deadline = time.monotonic() + 2.0
    leftover = session_processes(proc.pid)
    while leftover and time.monotonic() < deadline:
        time.sleep(0.05)
        leftover = session_processes(proc.pid)
    if leftover:
        kill_session(proc.pid, grace=0.5)
    return MPIResult(proc.returncode, out.decode("utf-8", "replace"),
                     err.decode("utf-8", "replace"), elapsed, timed_out, leftover)


def run_mpi(code: str, n: int = 2, *, timeout: float = 60.0, env: dict | None = None,
            args=()) -> MPIResult:
    """Run the Python source ``code`` on ``n`` ranks (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="shardflow-mpi-") as tmp:
        path = os.path.join(tmp, "rank_script.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(code))
        cmd = build_mpiexec_command(n, [sys.executable, "-u", path, *map(str, args)],
                                    tag_output=False)
        return _run(cmd, rank_env(env), timeout)


def program_command(program: str, args=()) -> list[str]:
    """The command that runs the test program ``program`` (a module name) in one process."""
    return [sys.executable, "-u", "-m", "shardflow.testing.rank_program", program,
            *map(str, args)]


def run_program(program: str, n: int = 2, *, args=(), timeout: float = 60.0,
                env: dict | None = None) -> MPIResult:
    """Run the test program ``program`` (a module name such as
    ``"tests.distributed.programs.ddp_buckets"``, whose ``main(argv)`` gets ``args``) on
    ``n`` ranks; ``check()`` on the result also wants every rank's ``main()`` to have
    returned (see the module docstring)."""
    cmd = build_mpiexec_command(n, program_command(program, args), tag_output=False)
    res = _run(cmd, rank_env(env), timeout)
    res.ranks = n
    return res


def run_script(path: str, n: int = 2, *, timeout: float = 60.0, env: dict | None = None,
               args=()) -> MPIResult:
    """Run an existing script on ``n`` ranks."""
    cmd = build_mpiexec_command(n, [sys.executable, "-u", path, *map(str, args)],
                                tag_output=False)
    return _run(cmd, rank_env(env), timeout)


def launch_cli(argv: list[str], *, timeout: float = 60.0, env: dict | None = None) -> MPIResult:
    """Run ``shardflow run ARGV`` in a subprocess (the launcher end to end)."""
    cmd = [sys.executable, "-u", "-c",
           "import sys; from shardflow.cli.run import main; sys.exit(main(sys.argv[1:]))",
           *argv]
    return _run(cmd, rank_env(env), timeout)
