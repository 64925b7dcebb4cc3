"""The communicator groups of a ``pp x dp`` layout (pipeline stages on sub-meshes).

World rank ``w = stage * dp + replica`` (the mesh ``("pp", "dp")`` in row-major order, as
``init_device_mesh(..., (pp, dp), mesh_dim_names=("pp", "dp"))`` numbers it). The pipeline
group of a rank is its mesh column (same ``replica``, all stages: activations and
gradients travel there by send/recv); its data-parallel group is its mesh row (same stage:
gradients are averaged there). Placements that leave ranks out are not built
(docs/GLOBAL.md), so a stage's tensors are plain local tensors on the ranks of its row,
i.e. the placement ``mesh["dp"]`` of that row with parameters ``Broadcast`` and the batch
``Split(0)``; these groups are the communicators of those sub-meshes.
"""

from __future__ import annotations

from ... import comm as _comm

__all__ = ["pipeline_groups"]


def pipeline_groups(pp: int, dp: int = 1, world=None):
    """``(pp_group, dp_group, stage)`` of this rank for a ``pp x dp`` layout; every rank of
    ``world`` must call it (``new_group`` is collective)."""
    world = world if world is not None else _comm.get_world()
    if pp * dp != world.size:
        raise ValueError(f"pp x dp = {pp} x {dp} = {pp * dp} but the world has {world.size} ranks; "
                         f"launch with `shardflow run -n {pp * dp}` or change pp/dp")
    if pp == 1 and dp == 1:
        return world, world, 0
    stage, replica = divmod(world.rank, dp)
    pp_group = dp_group = None
    for j in range(dp):  # columns: one pipeline per replica
        g = world.new_group([s * dp + j for s in range(pp)])
        if j == replica:
            pp_group = g
    for s in range(pp):  # rows: the replicas of one stage
        g = world.new_group([s * dp + j for j in range(dp)])
        if s == stage:
            dp_group = g
    return pp_group, dp_group, stage
