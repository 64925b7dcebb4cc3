"""Where this process sits in the job (rank, world size), for samplers and auto-sharding.

Asks ``shardflow.comm`` when it exposes the world (``world_info()`` or ``get_world_size`` /
``get_rank``); otherwise reads the launcher's variables through ``shardflow._config``. It
never initialises MPI itself.

Whether data parallel is active is one flag of the process, kept by
``shardflow.comm`` (``comm.set_data_parallel``, which DistributedDataParallel and
``fully_shard`` call): once it is set, a DataLoader with ``auto_shard=None`` and no user
sampler splits the dataset across ranks (see ``dataloader.py``). ``note_data_parallel`` is
this package's name for setting it.
"""

from __future__ import annotations

from .. import _config
from ..comm import world as _comm_world


def world() -> tuple[int, int]:
    """``(rank, world_size)`` of this process."""
    try:
        from .. import comm
    except ImportError:  # pragma: no cover - comm is part of the package
        comm = None
    if comm is not None:
        info = getattr(comm, "world_info", None)
        if callable(info):
            try:
                w = info()
                rank = getattr(w, "rank", None)
                size = getattr(w, "world_size", None) or getattr(w, "size", None)
                if rank is not None and size is not None:
                    return int(rank), int(size)
            except Exception:  # noqa: BLE001 - fall back to the launcher's view
                pass
        get_size, get_rank = getattr(comm, "get_world_size", None), getattr(comm, "get_rank", None)
        is_init = getattr(comm, "is_initialized", None)
        if callable(get_size) and callable(get_rank) and (not callable(is_init) or is_init()):
            try:
                return int(get_rank()), int(get_size())
            except Exception:  # noqa: BLE001
                pass
    li = _config.launch_info()
    return li.rank, li.world_size


def note_data_parallel(active: bool = True) -> None:
    """Record that the model is trained data-parallel (``comm.set_data_parallel``)."""
    _comm_world.set_data_parallel(active)


def data_parallel_active() -> bool:
    """The process's data-parallel flag (``comm.data_parallel_active``)."""
    return _comm_world.data_parallel_active()
