"""Several test programs in one MPI launch: each launch costs ~1.2 s of rank start-up, so the
tests of a file that run programs on the same number of ranks share one launch (a
module-scoped cache) and each test asserts that ITS program passed on every rank.

A failing program aborts the launch: its test fails with the ranks' tracebacks, and so do
the tests of the programs after it (their line never came), each naming its own program.
When every program passed, each test also wants the launch to have ended cleanly (exit code
0, no timeout, every rank's ``main()`` returned), as ``run_program(...).check()`` does."""

from shardflow.testing.mpi import rank_errors, run_program

PROGRAMS = "tests.distributed.programs."


def spec(module, *args):
    """The spec of one program run: ``"module:a:b"`` (see ``programs/several.py``)."""
    return ":".join([module, *map(str, args)])


class Launches:
    """One launch per group of specs, run on first use and kept (a module fixture holds it)."""

    def __init__(self, groups, timeout):
        self._groups = groups  # {n: [spec, ...]}
        self._timeout = timeout  # {n: seconds}
        self._results = {}

    def result(self, n):
        if n not in self._results:
            self._results[n] = run_program(PROGRAMS + "several", n=n, timeout=self._timeout[n],
                                           args=self._groups[n])
        return self._results[n]

    def check(self, n, one_spec):
        """Assert that ``one_spec`` ran and passed on all ``n`` ranks; the launch's stdout."""
        __tracebackhide__ = True
        assert one_spec in self._groups[n], (one_spec, self._groups[n])
        res = self.result(n)
        passed = self._passed(res, one_spec)
        if passed != n:
            raise AssertionError(
                f"program {one_spec!r} passed on {passed} of {n} ranks (launch rc="
                f"{res.returncode}, timed_out={res.timed_out}, {res.elapsed:.1f}s)\n"
                f"{rank_errors(res.stderr)}--- stdout ---\n{res.stdout}\n"
                f"--- stderr ---\n{res.stderr}")
        if all(self._passed(res, s) == n for s in self._groups[n]):
            res.check()  # every program passed: the launch itself must have ended cleanly
        return res.stdout

    @staticmethod
    def _passed(res, one_spec):
        return sum(1 for line in res.stdout.splitlines() if line == f"several: passed {one_spec}")
