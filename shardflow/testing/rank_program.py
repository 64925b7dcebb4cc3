"""The rank side of :func:`shardflow.testing.mpi.run_program`: run one test program here.

``python -m shardflow.testing.rank_program PACKAGE.MODULE [ARGS...]`` (what every rank of
``run_program`` runs):

1. imports ``PACKAGE.MODULE`` with pytest's assertion rewriting applied to the modules of
   ``PACKAGE`` (the program and its ``_common`` helpers), so that a failing ``assert a == b``
   says ``assert 3 == 4`` with the values, as in a pytest test (plain ``assert`` when pytest
   is not installed);
2. sets ``sys.argv`` to ``[the module's file, *ARGS]`` and calls its ``main(ARGS)``;
3. ``main`` returns ``None`` or ``0``: prints :data:`PASSED` with this rank and exits 0
   (``run_program``'s ``check()`` wants that line from every rank); another int: exits with
   it, no line; raises: with shardflow's excepthook installed (a world of more than one
   rank) the exception goes to it (traceback with ``[rank R]`` on every line, the whole job
   aborted, exit 1), else the traceback is printed the same way here and the exit code is 1;
   either way the traceback starts at the program (this module's frames left out).
   ``SystemExit`` passes through untouched.

The modules are compiled from source on every run (no ``.pyc`` is read or written for
them), so a cached unrewritten ``.pyc`` can never stand in for the rewritten code.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
import traceback

PASSED = "shardflow.testing: main() passed on rank"  # + " R" (the rank), one line per rank


class _RewritingLoader(importlib.machinery.SourceFileLoader):
    """A source loader whose code has pytest's assertion rewriting applied (never cached)."""

    def __init__(self, fullname: str, path: str, rewrite):
        super().__init__(fullname, path)
        self._rewrite = rewrite

    def get_code(self, fullname):
        source = self.get_data(self.path)
        tree = ast.parse(source, filename=self.path)
        self._rewrite(tree, source, self.path)
        return compile(tree, self.path, "exec", dont_inherit=True)


class _RewritingFinder(importlib.abc.MetaPathFinder):
    """Finds the source modules under ``package`` and gives them a :class:`_RewritingLoader`."""

    def __init__(self, package: str, rewrite):
        self._prefix = package + "."
        self._rewrite = rewrite

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self._prefix):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return None
        spec.loader = _RewritingLoader(fullname, spec.origin, self._rewrite)
        return spec


def _install_rewriting(package: str) -> bool:
    """Rewrite the asserts of ``package``'s modules from now on (False: no pytest here)."""
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:
        return False
    sys.meta_path.insert(0, _RewritingFinder(package, rewrite_asserts))
    return True


def _rank() -> int:
    from .. import _config

    return _config.launch_info().rank


def _report(exc: BaseException) -> None:
    """Print ``exc``'s traceback, every line prefixed ``[rank R]`` (as shardflow's hook does)."""
    from ..comm.failure import print_failure

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    print_failure(text + f"shardflow.testing: the program raised on rank {_rank()}\n", _rank())


def run(module_name: str, args: list[str]) -> int:
    """Import ``module_name`` (asserts rewritten), call its ``main(args)``; the exit code."""
    package = module_name.rpartition(".")[0]
    if package:
        _install_rewriting(package)
    try:
        module = importlib.import_module(module_name)
        main = getattr(module, "main", None)
        if not callable(main):
            raise TypeError(f"test program {module_name} has no main(argv) function; define "
                            "`def main(argv): ...` (the program's body) in it")
        sys.argv = [module.__file__, *args]
        code = main(list(args))
    except Exception as exc:  # noqa: BLE001 (SystemExit and KeyboardInterrupt pass through)
        tb = exc.__traceback__.tb_next  # from the program's frame on (not this module's)
        if sys.excepthook is not sys.__excepthook__:
            # shardflow's hook: the traceback on every rank's lines, MPI_Abort of the job
            sys.excepthook(type(exc), exc, tb)
        else:
            _report(exc.with_traceback(tb))
        return 1
    if code not in (None, 0):
        return int(code)
    sys.stdout.flush()
    print(f"{PASSED} {_rank()}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print("usage: python -m shardflow.testing.rank_program PACKAGE.MODULE [ARGS...]",
              file=sys.stderr)
        return 2
    return run(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
