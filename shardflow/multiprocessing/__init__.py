"""``torch.multiprocessing``: the standard library's ``multiprocessing`` with PyTorch's
additions (``spawn``, ``start_processes``, ``ProcessContext``, sharing strategies).

Tensors sent through a ``Queue`` or ``Pipe`` are pickled, i.e. copied (a Tensor pickles as
its array): shardflow has no shared-memory tensor storage, so the sharing strategy is
recorded but changes nothing, and Hogwild-style training where processes update one
shared model does not share updates. For data-parallel training use
``shardflow run -n N script.py`` (docs/DISTRIBUTED.md), not ``spawn``.
"""

from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F403

from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

__all__ = list(_mp.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessException", "ProcessExitedException",
    "ProcessRaisedException", "set_sharing_strategy", "get_sharing_strategy",
    "get_all_sharing_strategies",
]

_SHARING = {"strategy": "file_descriptor"}


def get_all_sharing_strategies() -> set[str]:
    return {"file_descriptor", "file_system"}


def get_sharing_strategy() -> str:
    return _SHARING["strategy"]


def set_sharing_strategy(new_strategy: str) -> None:
    """Accepted for PyTorch compatibility; tensors are copied between processes either way."""
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(
            f"sharing strategy must be one of {sorted(get_all_sharing_strategies())}, got {new_strategy!r}"
        )
    _SHARING["strategy"] = new_strategy
