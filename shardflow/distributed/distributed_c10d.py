"""``torch.distributed.distributed_c10d``: the module torch's process-group API lives in, which
programs import from directly (``from torch.distributed.distributed_c10d import
_get_default_group, ReduceOp``). Its public names are ``shardflow.distributed``'s (the same
objects); the private helpers programs use are here:

* ``_get_default_group()``: the world group (torch's ValueError before ``init_process_group``);
* ``_rank_not_in_group(group)``: whether ``new_group`` left this rank out (torch's test);
* ``_get_group_size(group)``, ``_get_global_rank(group, rank)`` (torch's FutureWarning: use
  ``get_global_rank``), ``_get_pg_default_device(group)`` (torch's warning; ``cpu``, or
  ``cuda`` for a group on NCCL);
* ``_world``: its ``default_pg``. torch's registry of every group (``pg_map``, ``pg_names``,
  ``pg_group_ranks`` ...) is not kept: reading one raises an AttributeError naming
  ``get_process_group_ranks``. Missing: ``GroupName``, ``shrink_group``, ``record_comm``,
  ``ProcessGroupGloo`` and the other private helpers.
"""

from __future__ import annotations

import warnings

from ..backend.device import device as _device
from . import NOT_INITIALIZED as _NOT_INITIALIZED
from . import (
    AllreduceCoalescedOptions,
    AllreduceOptions,
    AllToAllOptions,
    Backend,
    BackendConfig,
    BarrierOptions,
    BroadcastOptions,
    DebugLevel,
    GatherOptions,
    GroupMember,
    P2POp,
    PrefixStore,
    ProcessGroup,
    ReduceOp,
    ReduceOptions,
    ReduceScatterOptions,
    ScatterOptions,
    Store,
    Work,
    all_gather,
    all_gather_coalesced,
    all_gather_into_tensor,
    all_gather_object,
    all_gather_single,
    all_reduce,
    all_reduce_coalesced,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    default_pg_timeout,
    destroy_process_group,
    gather,
    gather_object,
    get_backend,
    get_backend_config,
    get_debug_level,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_backend_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    is_xccl_available,
    isend,
    monitored_barrier,
    new_group,
    new_subgroups,
    new_subgroups_by_enumeration,
    recv,
    recv_object_list,
    reduce,
    reduce_op,
    reduce_scatter,
    reduce_scatter_single,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
    send_object_list,
    split_group,
    supports_complex,
)
from . import _group as _resolve_group

__all__ = ['Backend', 'BackendConfig', 'GroupMember', 'P2POp', 'all_gather', 'all_gather_coalesced', 'all_gather_object', 'all_reduce', 'all_reduce_coalesced', 'all_to_all', 'all_to_all_single', 'barrier', 'batch_isend_irecv', 'broadcast', 'send_object_list', 'recv_object_list', 'broadcast_object_list', 'destroy_process_group', 'gather', 'gather_object', 'get_backend_config', 'get_backend', 'get_default_backend_for_device', 'get_rank', 'get_world_size', 'get_pg_count', 'group', 'init_process_group', 'irecv', 'is_gloo_available', 'is_initialized', 'is_mpi_available', 'is_backend_available', 'is_nccl_available', 'is_torchelastic_launched', 'is_ucc_available', 'is_xccl_available', 'isend', 'monitored_barrier', 'new_group', 'new_subgroups', 'new_subgroups_by_enumeration', 'recv', 'reduce', 'reduce_scatter', 'scatter', 'scatter_object_list', 'send', 'supports_complex', 'AllreduceCoalescedOptions', 'AllreduceOptions', 'AllToAllOptions', 'BarrierOptions', 'BroadcastOptions', 'GatherOptions', 'PrefixStore', 'ProcessGroup', 'ReduceOp', 'ReduceOptions', 'ReduceScatterOptions', 'ScatterOptions', 'Store', 'DebugLevel', 'get_debug_level', 'Work', 'default_pg_timeout', 'get_group_rank', 'get_global_rank', 'get_process_group_ranks', 'reduce_op', 'all_gather_single', 'all_gather_into_tensor', 'reduce_scatter_single', 'reduce_scatter_tensor', 'get_node_local_rank', 'split_group', '_get_default_group', '_rank_not_in_group', '_get_global_rank', '_get_group_size', '_get_pg_default_device', '_world']


def _get_default_group():
    """The default (world) process group ``init_process_group`` made."""
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED + " (call dist.init_process_group() first, or check "
                         "dist.is_initialized())")
    return _resolve_group(None)


def _rank_not_in_group(group) -> bool:
    """True when ``group`` is what ``new_group`` returns to a rank outside its ranks."""
    return group is not None and group is GroupMember.NON_GROUP_MEMBER


def _get_group_size(group) -> int:
    return get_world_size(group)


def _get_global_rank(group, rank) -> int:
    warnings.warn("`torch.distributed.distributed_c10d._get_global_rank` is deprecated, please use "
                  "`torch.distributed.distributed_c10d.get_global_rank` instead", FutureWarning, stacklevel=2)
    return get_global_rank(group, rank)


def _get_pg_default_device(group=None):
    """The device ``group``'s collectives take tensors on: ``cuda`` on NCCL, else ``cpu``."""
    warnings.warn("`_get_pg_default_device` will be deprecated, it only stays for backward-compatibility "
                  "reason. If you need to find a device for object collectives, please use "
                  "`_get_object_coll_device`. If you need to query the device types supported by group, "
                  "please use `_device_capability(group)`. ", stacklevel=2)
    backend = get_backend(group if group is not None else _get_default_group())
    return _device("cuda" if str(backend) == "nccl" else "cpu")


class _World:
    """torch's ``_world``: the default group; the registry of groups is not kept here."""

    @property
    def default_pg(self):
        return _get_default_group() if is_initialized() else None

    def __getattr__(self, name):
        raise AttributeError(f"torch.distributed.distributed_c10d._world.{name}: shardflow keeps no registry of "
                             "process groups (only _world.default_pg); keep the groups new_group returned, "
                             "and ask their ranks with dist.get_process_group_ranks(group)")


_world = _World()
