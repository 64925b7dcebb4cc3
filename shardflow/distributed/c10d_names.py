"""torch.distributed's smaller c10d names that need no process group (layer L6): the
``*Options`` structs, the deprecated ``reduce_op``, ``BuiltinCommHookType``, ``GradBucket``,
``is_ucc_available`` / ``is_xccl_available``, and ``rendezvous`` /
``register_rendezvous_handler`` (an error naming ``shardflow run``).

The options structs are what torch's ``ProcessGroup`` methods take (``pg.allreduce([t],
AllreduceOptions())``); programs build them to pass a reduce op or a root. Here they are
plain dataclasses with torch's field names and defaults (``timeout`` torch's unset value,
``timedelta(milliseconds=-1)``); shardflow's collectives take the same values as keywords.
"""

from __future__ import annotations

import enum
import warnings
from dataclasses import dataclass, field
from datetime import timedelta

from ..comm import ReduceOp
from ..nn.parallel.grad_bucket import GradBucket

__all__ = [
    "AllreduceOptions", "AllreduceCoalescedOptions", "AllToAllOptions", "BarrierOptions",
    "BroadcastOptions", "GatherOptions", "ReduceOptions", "ReduceScatterOptions",
    "ScatterOptions", "BuiltinCommHookType", "GradBucket", "reduce_op", "is_ucc_available",
    "is_xccl_available", "rendezvous", "register_rendezvous_handler",
]

_UNSET_TIMEOUT = timedelta(milliseconds=-1)  # torch's "no timeout given"


def _timeout():
    return field(default_factory=lambda: _UNSET_TIMEOUT)


@dataclass
class AllreduceOptions:
    reduceOp: str = ReduceOp.SUM  # noqa: N815 - torch's field names
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


@dataclass
class AllreduceCoalescedOptions(AllreduceOptions):
    pass


@dataclass
class AllToAllOptions:
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


@dataclass
class BarrierOptions:
    device_ids: list = field(default_factory=list)
    device: object = None
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


@dataclass
class BroadcastOptions:
    rootRank: int = 0  # noqa: N815
    rootTensor: int = 0  # noqa: N815
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


@dataclass
class GatherOptions:
    rootRank: int = 0  # noqa: N815
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


@dataclass
class ReduceOptions:
    reduceOp: str = ReduceOp.SUM  # noqa: N815
    rootRank: int = 0  # noqa: N815
    rootTensor: int = 0  # noqa: N815
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


@dataclass
class ReduceScatterOptions:
    reduceOp: str = ReduceOp.SUM  # noqa: N815
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


@dataclass
class ScatterOptions:
    rootRank: int = 0  # noqa: N815
    timeout: timedelta = _timeout()
    asyncOp: bool = True  # noqa: N815


class BuiltinCommHookType(enum.Enum):
    """torch's built-in DDP hooks (``DDP._register_builtin_comm_hook``); shardflow's DDP takes
    them through ``register_comm_hook`` with ``default_hooks`` (docs/AMP.md)."""

    ALLREDUCE = 1
    FP16_COMPRESS = 2


class _DeprecatedReduceOp:
    """torch's deprecated ``dist.reduce_op``: ``reduce_op.SUM`` is ``ReduceOp.SUM`` (with a
    deprecation warning on each access, torch's FutureWarning: unlike a DeprecationWarning it
    is shown by default, as in torch)."""

    _NAMES = ("SUM", "AVG", "PRODUCT", "MIN", "MAX")

    def __getattr__(self, key):
        if key not in self._NAMES:
            raise AttributeError(f"reduce_op has no {key!r}; its members: {self._NAMES}")
        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use "
                      "`torch.distributed.ReduceOp` instead", FutureWarning, stacklevel=2)
        return getattr(ReduceOp, key)

    @property
    def __members__(self) -> dict:
        return {k: getattr(ReduceOp, k) for k in self._NAMES}


reduce_op = _DeprecatedReduceOp()


def is_ucc_available() -> bool:
    """False: shardflow has no UCC engine (``gloo``/``mpi`` run on MPI, ``nccl`` on NCCL)."""
    return False


def is_xccl_available() -> bool:
    """False: shardflow has no XCCL (Intel GPU) engine."""
    return False


NO_RENDEZVOUS = (
    "torch.distributed.{name} has no shardflow counterpart: shardflow run starts the job and "
    "its ranks find each other through MPI (`shardflow run -n N script.py`, then "
    "dist.init_process_group()); see docs/DISTRIBUTED.md"
)


def rendezvous(url: str, rank: int = -1, world_size: int = -1, **kwargs):
    """torch's store rendezvous (a generator of ``(store, rank, world_size)``); raises."""
    raise NotImplementedError(NO_RENDEZVOUS.format(name="rendezvous"))


def register_rendezvous_handler(scheme, handler):
    """torch's registry of ``init_method`` URL schemes; raises."""
    raise NotImplementedError(NO_RENDEZVOUS.format(name="register_rendezvous_handler"))
