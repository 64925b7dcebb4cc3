"""What each rank runs under ``shardflow run --timeline out.json``.

``python -m shardflow.cli.timeline_rank DIR PROGRAM...`` runs the Python program
(``script.py args``, ``-m module args`` or ``-c code args``) exactly as ``python`` would
(``sys.argv``, ``sys.path[0]``, ``__main__``), inside a :class:`shardflow.profiler.profile`,
and writes the rank's Chrome trace to ``DIR/rank<R>.json`` when the program ends, also
when it raises or calls ``sys.exit``. The launcher merges the files (``profiler.chrome.merge``).
``prof.step()`` is not called for the program; a program that wants per-step rows in the
summary runs its own ``profile(schedule=...)`` (its events are recorded here too).
"""

from __future__ import annotations

import os
import runpy
import sys

from .. import _config
from ..profiler import profile


def _run_program(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("timeline_rank: nothing to run")
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path.insert(0, "")
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    out_dir, program = argv[0], argv[1:]
    prof = profile()
    prof.start()
    try:
        _run_program(program)
    finally:
        prof.stop()
        rank = _config.launch_info().rank
        prof.export_chrome_trace(os.path.join(out_dir, f"rank{rank}.json"), rank=rank)
    return 0


if __name__ == "__main__":
    sys.exit(main())
