"""One rank of ``python -m shardflow.distributed.launch`` (layer L6): ``python -m
shardflow.distributed.launch_rank [-m] target args...`` runs the script (or module) as
``__main__`` with ``--local-rank=<local rank>`` inserted before its arguments, as torch's
launcher does without ``--use-env``. The local rank is the launcher's
(``_config.launch_info``)."""

from __future__ import annotations

import os
import runpy
import sys

from .. import _config

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    module = bool(argv) and argv[0] == "-m"
    if module:
        argv = argv[1:]
    if not argv:
        raise SystemExit("python -m shardflow.distributed.launch_rank: give a script (or -m "
                         "module) to run")
    target, rest = argv[0], argv[1:]
    local = f"--local-rank={_config.launch_info().local_rank}"
    sys.argv = [target, local, *rest]
    if module:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))  # as `python script.py`
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main()
