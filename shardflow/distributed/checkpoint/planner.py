"""PyTorch DCP's planner names: ``SavePlanner`` / ``LoadPlanner``, their defaults, and the plan
dataclasses (``SavePlan``, ``LoadPlan``, ``WriteItem``, ``ReadItem``).

shardflow's save and load plan by themselves (``saver.py``: boxes exchanged, one writer per
distinct box; ``loader.py``: box intersections), so a planner is a set of options, not a
program: :func:`load_options` reads the two that change behaviour
(``DefaultLoadPlanner(allow_partial_load=True)``: keys of the state dict missing from the
checkpoint are left as they are) and refuses a custom planner class (one that overrides
torch's planning steps) with an error saying what to do instead. The dataclasses have torch's
fields, for code that builds or inspects them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

__all__ = ["SavePlanner", "LoadPlanner", "DefaultSavePlanner", "DefaultLoadPlanner",
           "SavePlan", "LoadPlan", "WriteItem", "ReadItem", "WriteItemType", "LoadItemType",
           "check_save_planner", "load_options"]


class WriteItemType(enum.Enum):
    TENSOR = enum.auto()
    SHARD = enum.auto()
    BYTE_IO = enum.auto()


class LoadItemType(enum.Enum):
    TENSOR = enum.auto()
    BYTE_IO = enum.auto()


@dataclass(frozen=True)
class WriteItem:
    """One thing to write: ``index`` (a MetadataIndex), its type, and its data's description."""

    index: Any
    type: WriteItemType
    bytes_io_data: Any = None
    tensor_data: Any = None


@dataclass(frozen=True)
class ReadItem:
    """One read: a region of a stored tensor (``storage_index``/``storage_offsets``) into a
    region of the destination (``dest_index``/``dest_offsets``) of ``lengths``."""

    type: LoadItemType
    dest_index: Any
    dest_offsets: Any
    storage_index: Any
    storage_offsets: Any
    lengths: Any


@dataclass(frozen=True)
class SavePlan:
    items: list
    storage_data: Any = None
    planner_data: Any = None
    usable: bool = True


@dataclass
class LoadPlan:
    items: list
    storage_data: Any = None
    planner_data: Any = None


class SavePlanner:
    """Base of save planners (torch's interface). shardflow's :func:`~.save` runs its own plan;
    pass ``DefaultSavePlanner()`` or nothing."""


class LoadPlanner:
    """Base of load planners (torch's interface). shardflow's :func:`~.load` runs its own plan;
    pass ``DefaultLoadPlanner(...)`` or nothing."""


class DefaultSavePlanner(SavePlanner):
    """torch's default save planner; its options are what shardflow's save does already
    (state dicts are flattened, replicated tensors written once, by the least-loaded rank)."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 dedup_replicated_tensors: bool | None = None,
                 dedup_save_to_lowest_rank: bool = False, enable_plan_caching: bool = False):
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.dedup_replicated_tensors = dedup_replicated_tensors
        self.dedup_save_to_lowest_rank = dedup_save_to_lowest_rank
        self.enable_plan_caching = enable_plan_caching


class DefaultLoadPlanner(LoadPlanner):
    """torch's default load planner. ``allow_partial_load=True``: a key of the state dict that
    the checkpoint lacks is left unchanged instead of being an error."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 allow_partial_load: bool = False):
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.allow_partial_load = allow_partial_load


def _refuse(planner, what: str, default: str):
    raise NotImplementedError(
        f"dcp.{what}(planner={type(planner).__name__}(...)): shardflow's {what} plans by itself "
        f"(docs/CHECKPOINT.md), so only {default}() (or None) is accepted; a planner that "
        "renames or transforms entries is the same as editing the state dict before the "
        f"{what}: do that instead"
    )


def check_save_planner(planner) -> None:
    """Accept None or a ``DefaultSavePlanner`` (its own class, not a subclass)."""
    if planner is not None and type(planner) is not DefaultSavePlanner:
        _refuse(planner, "save", "DefaultSavePlanner")


def load_options(planner) -> bool:
    """``allow_partial_load`` of a ``DefaultLoadPlanner`` (False for None); other planners
    are refused."""
    if planner is None:
        return False
    if type(planner) is not DefaultLoadPlanner:
        _refuse(planner, "load", "DefaultLoadPlanner")
    return bool(planner.allow_partial_load)
