"""``new_subgroups`` / ``new_subgroups_by_enumeration``: many groups in one call, over
``new_group`` (layer L6).

Every rank of the world calls them with the same arguments (``new_group`` is collective over
the world): each subgroup is made with one ``new_group`` call, in list order, on every rank,
and each rank keeps the one it belongs to. The lists are checked (non-empty, no rank in two
subgroups, sizes that divide the group) before any group is made, so a bad argument changes
nothing.
"""

from __future__ import annotations

from .. import accelerator

__all__ = ["new_subgroups", "new_subgroups_by_enumeration"]


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """One group per list of global ranks in ``ranks_per_subgroup_list``; returns
    ``(cur_subgroup, subgroups)``: the group holding this rank (None if none does) and all
    groups (a non-member's entry is ``GroupMember.NON_GROUP_MEMBER``, as ``new_group``)."""
    from . import get_rank, new_group

    if ranks_per_subgroup_list is None or len(ranks_per_subgroup_list) == 0:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    owner: dict[int, list] = {}
    for ranks in ranks_per_subgroup_list:
        for rank in ranks:
            if rank in owner:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {owner[rank]} and "
                                 f"{ranks}")
            owner[rank] = ranks
    me = get_rank()
    subgroups, cur_subgroup = [], None
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks=ranks, timeout=timeout, backend=backend,
                             pg_options=pg_options)
        subgroups.append(subgroup)
        if me in ranks:
            cur_subgroup = subgroup
    return cur_subgroup, subgroups


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Split ``group`` (default: the world) into consecutive subgroups of ``group_size``
    ranks (default: the number of GPUs of this host, which needs CUDA); returns
    ``(cur_subgroup, subgroups)`` as :func:`new_subgroups_by_enumeration`."""
    from . import get_process_group_ranks, get_world_size

    if group_size is None:
        if accelerator.device_count() == 0:
            raise ValueError(
                "Default group size only takes effect when CUDA is available."
                "If your subgroup using a backend that does not depend on CUDA,"
                "please pass in 'group_size' correctly."
            )
        group_size = accelerator.device_count()
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group=group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by '{group_size=}'")
    ranks = get_process_group_ranks(group)
    return new_subgroups_by_enumeration(
        [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)],
        timeout=timeout, backend=backend, pg_options=pg_options, group_desc=group_desc,
    )
