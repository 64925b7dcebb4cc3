"""One rank of an MPI-launched ``spawn`` (``mpi_spawn.py``):
``python -m shardflow.multiprocessing.mpi_child PAYLOAD``.

Prepares the process as the standard library's spawn start method does (``sys.path``, the
working folder, the main script re-imported as ``__mp_main__``), then runs
``fn(rank, *args)``; a raised exception's traceback goes to ``ERRDIR/<rank>`` and the rank
exits 1 (the parent turns it into ``ProcessRaisedException``); a ``sys.exit(code)`` with a
non-zero code is recorded in ``ERRDIR/<rank>.exit`` (the parent's ``ProcessExitedException``
names the rank and the code, as torch's).
"""

from __future__ import annotations

import multiprocessing.spawn as _mp_spawn
import os
import pickle
import sys
import traceback


def main(argv: list[str]) -> int:
    from .. import _config

    with open(argv[0], "rb") as fh:
        payload = pickle.load(fh)  # written by our parent into its private (0700) folder
    _mp_spawn.prepare(payload["preparation"])
    fn, args = pickle.loads(payload["target"])
    rank = _config.launch_info().rank
    try:
        fn(rank, *args)
    except KeyboardInterrupt:
        return 1
    except SystemExit as stop:  # sys.exit(code) in fn: the parent names this rank and code
        code = stop.code if isinstance(stop.code, int) or stop.code is None else 1
        if code:
            path = f"{payload['errdir']}/{rank}.exit"
            with open(path + ".tmp", "w") as fh:
                fh.write(str(code))
            os.replace(path + ".tmp", path)
        raise
    except Exception:
        path = f"{payload['errdir']}/{rank}"
        with open(path + ".tmp", "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        os.replace(path + ".tmp", path)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
