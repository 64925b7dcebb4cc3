"""The communicator groups of a pipeline layout: ``pp x dp`` (``pipeline_groups``) and
``pp x dp x tp`` (``pipeline_mesh``), pipeline stages on sub-meshes.

World rank ``w = (stage * dp + replica) * tp + tp_index``: the mesh ``("pp", "dp", "tp")`` in
row-major order, as ``init_device_mesh(device_type, (pp, dp, tp), mesh_dim_names=("pp",
"dp", "tp"))`` numbers it; ``device_type`` is the model's ("cuda" for a GPU model: the
stages' global tensors stay on the GPU and their collectives go over NCCL). Per rank:

* the **pipeline group** is its line along ``"pp"`` (same replica and tp index, every stage):
  activations and gradients travel there by send/recv, so TP rank ``t`` of stage ``s``
  exchanges with TP rank ``t`` of stages ``s - 1`` and ``s + 1``;
* the **data-parallel group** is its line along ``"dp"`` (same stage and tp index): the
  gradients of this rank's parameter shards are averaged there;
* the **tensor-parallel sub-mesh** ``mesh["tp"]`` (same stage and replica) is a placement that
  leaves the other ranks out: the stage's parameters are global tensors on it (Megatron's
  layout), its input a ``Broadcast`` global tensor, its output gathered whole before sending.

With ``tp == 1`` a stage's tensors stay plain local tensors on the ranks of its row (in the
placement vocabulary: parameters ``Broadcast`` and the batch ``Split(0)`` over ``mesh["dp"]``);
the ``dp`` all-reduce is that row's ``P -> B``.

Every group is made at setup by every rank, in the same order (``new_group`` is collective
over the world), before the stages' code diverges.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import comm as _comm

__all__ = ["pipeline_groups", "pipeline_mesh", "PipelineMesh"]


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


@dataclass
class PipelineMesh:
    """This rank's place in a ``pp x dp x tp`` layout (see the module docstring)."""

    mesh: object  # the ("pp", "dp", "tp") placement over the world
    pp_group: object  # communicator along "pp": this rank's pipeline
    dp_group: object  # communicator along "dp": this stage's replicas (same tp index)
    tp_mesh: object  # mesh["tp"]: this stage's tensor-parallel ranks (a 1-D sub-mesh)
    stage: int
    replica: int
    tp_index: int


def pipeline_mesh(pp: int, dp: int = 1, tp: int = 1, device_type: str = "cpu") -> PipelineMesh:
    """Build the ``("pp", "dp", "tp")`` mesh on ``device_type`` (the model's: ``"cpu"`` or
    ``"cuda"``) and all its communicators (every rank must call it, in the same order as any
    other group creation)."""
    from ..placement import init_device_mesh

    world = _comm.get_world()
    if pp * dp * tp != world.size:
        raise ValueError(f"pp x dp x tp = {pp} x {dp} x {tp} = {pp * dp * tp} but the world has "
                         f"{world.size} ranks; launch with `shardflow run -n {pp * dp * tp}` or "
                         "change the factors")
    mesh = init_device_mesh(device_type, (pp, dp, tp),
                            mesh_dim_names=("pp", "dp", "tp")).create_groups()
    stage, replica, tp_index = mesh.coordinate
    return PipelineMesh(mesh, mesh.group(0), mesh.group(1), mesh["tp"], stage, replica, tp_index)
