"""Run Python code on N real ranks under mpiexec, for tests.

``run_mpi(code, n=2)`` writes ``code`` to a temporary script, starts it with the same
mpiexec command ``shardflow run`` builds (root/oversubscribe flags, ``PYTHONPATH`` with
shardflow), in its own session, waits at most ``timeout`` seconds, then kills every
process left in that session and reports whether any survived. Output is captured raw
(no rank prefixes: ranks prefix their own failure messages with ``[rank R]``).

``launch_cli(argv)`` runs ``shardflow run ARGV`` (the launcher itself) in a subprocess the
same way, to test the launcher end to end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass

from ..comm.launcher import build_mpiexec_command, kill_session, rank_env, session_processes


@dataclass
class MPIResult:
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool
    leftover: list  # PIDs that were still alive after the job ended (before the cleanup)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def check(self) -> MPIResult:
        """Raise AssertionError with the whole output unless the job succeeded."""
        if self.returncode != 0 or self.timed_out:
            raise AssertionError(
                f"MPI job failed (rc={self.returncode}, timed_out={self.timed_out}, "
                f"{self.elapsed:.1f}s)\n--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}"
            )
        return self


def _run(cmd, env, timeout) -> MPIResult:
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
