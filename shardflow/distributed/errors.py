"""torch.distributed's small process-level names: its exception classes, the debug level,
``is_torchelastic_launched``, ``get_pg_count`` and ``supports_complex`` (layer L6).

Exceptions have torch's hierarchy: ``DistError(RuntimeError)`` with the subclasses
``DistBackendError``, ``DistNetworkError`` and ``DistStoreError``, so a program's
``except dist.DistError`` has a class to name. The debug level is a process-wide setting as in
torch (``TORCH_DISTRIBUTED_DEBUG`` = ``OFF``/``INFO``/``DETAIL``); shardflow's own collective
checks are chosen by ``SHARDFLOW_DEBUG`` (docs/DISTRIBUTED.md), so the level is recorded and
reported, and changes no behaviour.
"""

from __future__ import annotations

import enum

from .. import _config
from ..comm import ReduceOp

__all__ = [
    "DistError", "DistBackendError", "DistNetworkError", "DistStoreError", "QueueEmptyError",
    "DebugLevel",
    "get_debug_level", "set_debug_level", "set_debug_level_from_env",
    "is_torchelastic_launched", "get_pg_count", "supports_complex",
]


class DistError(RuntimeError):
    """Base of torch.distributed's errors."""


class DistBackendError(DistError):
    """A backend (collective engine) error."""


class DistNetworkError(DistError):
    """A network error (a peer or the store could not be reached)."""


class DistStoreError(DistError):
    """A store error (e.g. a key did not appear within the timeout)."""


class QueueEmptyError(DistStoreError):
    """A store queue was empty (torch's ``Store.queue_pop`` without a value)."""


class DebugLevel(enum.IntEnum):
    """torch.distributed's debug levels."""

    OFF = 0
    INFO = 1
    DETAIL = 2

    def __str__(self) -> str:  # torch prints ``DebugLevel.INFO``
        return f"DebugLevel.{self.name}"


# None until first asked or set: then TORCH_DISTRIBUTED_DEBUG decides (torch reads it when
# torch.distributed is imported; read lazily here, as shardflow has no import-time effects)
_debug_level: list[DebugLevel | None] = [None]


def get_debug_level() -> DebugLevel:
    """The debug level last set; before any is set, ``TORCH_DISTRIBUTED_DEBUG``'s (OFF if
    unset)."""
    if _debug_level[0] is None:
        set_debug_level_from_env()
    return _debug_level[0]


def set_debug_level(level: DebugLevel) -> None:
    """Set the process-wide debug level; ``level`` must be a :class:`DebugLevel`."""
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level() takes a dist.DebugLevel (OFF, INFO or DETAIL), got "
                        f"{level!r}; pass e.g. dist.DebugLevel.INFO")
    _debug_level[0] = level


def set_debug_level_from_env() -> None:
    """Set the debug level from ``TORCH_DISTRIBUTED_DEBUG`` (case-insensitive; OFF if unset)."""
    raw = _config.torch_distributed_debug()
    name = "OFF" if raw is None else raw.strip().upper()
    if name not in DebugLevel.__members__:
        raise ValueError("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.")
    _debug_level[0] = DebugLevel[name]


def is_torchelastic_launched() -> bool:
    """True when torchelastic (torchrun) started this process: torch's rule,
    ``TORCHELASTIC_RUN_ID`` is set."""
    return _config.torchelastic_run_id() is not None


# Process groups alive in this process: the world counts one from init_process_group, each
# new_group call one more; destroying the world resets the count (torch's group_count).
_pg_count: list[int] = [0]


def get_pg_count() -> int:
    """The number of process groups created since the default group (0 before init)."""
    return _pg_count[0]


def _count_group(reset: bool = False) -> None:
    _pg_count[0] = 0 if reset else _pg_count[0] + 1


def supports_complex(reduceOp) -> bool:  # noqa: N803 - PyTorch's argument name
    """True when ``reduceOp`` is defined for complex tensors (SUM, AVG; not MAX, MIN,
    PRODUCT, whose order or product of complex numbers torch refuses)."""
    return ReduceOp.parse(reduceOp) not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT)
