"""Where this process sits in the job (rank, world size), for samplers and auto-sharding.

Asks ``shardflow.comm`` when it exposes the world (``world_info()`` or ``get_world_size`` /
``get_rank``); otherwise reads the launcher's variables through ``shardflow._config``. It
never initialises MPI itself.

``note_data_parallel()`` is the hook data-parallel wrappers call (DistributedDataParallel's
constructor): once it has been called, a DataLoader with ``auto_shard=None`` and no user
sampler splits the dataset across ranks (see ``dataloader.py``).
"""

from __future__ import annotations

from .. import _config

_state = {"data_parallel": False}


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
    """Record that the model is trained data-parallel (called by DistributedDataParallel)."""
    _state["data_parallel"] = bool(active)


def data_parallel_active() -> bool:
    return _state["data_parallel"]
