"""The layout phase of ``shardflow train``: the world and how its ranks share the model.

:func:`plan_layout` joins the process group and chooses the layout from the flags and the
world size, refusing one that cannot run before anything is built:

* ``--pp P``: pipeline stages through ``shardflow.parallelize`` (``pipeline.py``);
* ``--tp T`` (or an explicit ``--dp``): global tensors on a ``(dp, tp)`` mesh, Megatron's
  split on tp, every rank reading the whole global batch and keeping its S(0) part;
* ``--zero 2/3``: ``fully_shard`` (each transformer block one unit, then the root);
* otherwise, on N > 1 ranks, ``DistributedDataParallel`` on this rank's slice of each batch
  (``--zero 1`` shards the optimizer state on top of it: :func:`shard_optimizer`).

:func:`apply_layout` lays out the built (and possibly resumed) model and optimizer.
"""

from __future__ import annotations

from dataclasses import dataclass

import shardflow.data as sfdata
import shardflow.nn as nn
from shardflow import _config

from .config import ConfigError, TrainConfig


@dataclass(frozen=True)
class Layout:
    """Where this rank stands and how the ranks share the model (checked, not yet built)."""

    rank: int
    world: int
    zero: int = 0
    pipeline_dp: int | None = None  # --pp > 1: the pipeline layout's data-parallel degree
    global_tensors: tuple[int, int] | None = None  # (dp, tp) of a global-tensor layout

    @property
    def master(self) -> bool:
        """Rank 0 prints, writes the files and runs the demo."""
        return self.rank == 0

    @property
    def shards_parameters(self) -> bool:
        """Parameters are split over ranks (global tensors, ZeRO 2/3): checkpoints and the
        demo gather whole tensors (collectives). The pipeline gathers its own way."""
        return self.global_tensors is not None or self.zero >= 2

    @property
    def batch_slice(self) -> tuple[int, int]:
        """``(index, count)`` of this rank's slice of each global batch: global tensors and
        pipelines read the whole batch (and lay it out themselves), DDP its own slice."""
        whole = self.global_tensors is not None or self.pipeline_dp is not None
        return (0, 1) if whole else (self.rank, self.world)


def plan_layout(cfg: TrainConfig) -> Layout:
    """Join the process group (NCCL for ``--device cuda``, MPI carries the rest) and check
    the layout against the real world size; raises ConfigError before anything is built."""
    rank, world = _join_world(cfg)
    pipeline_dp = None
    if cfg.pp > 1:
        from .pipeline import check_pipeline_config

        pipeline_dp = check_pipeline_config(cfg, world, ConfigError)
    global_tensors = None if pipeline_dp else _global_tensor_mesh(cfg, world)
    _check_batch_split(cfg, world, pipeline_dp, global_tensors)
    return Layout(rank, world, cfg.zero, pipeline_dp, global_tensors)


def _join_world(cfg: TrainConfig) -> tuple[int, int]:
    li = _config.launch_info()
    rank, world = li.rank, li.world_size
    if world > 1:
        import shardflow.distributed as dist

        if not dist.is_initialized():  # NCCL for device tensors (MPI carries the rest)
            dist.init_process_group("nccl" if cfg.device == "cuda" else None)
        rank, world = dist.get_rank(), dist.get_world_size()
    return rank, world


def _global_tensor_mesh(cfg: TrainConfig, world: int):
    """``(dp, tp)`` when the run uses global tensors (--tp > 1 or an explicit --dp), else
    None (DistributedDataParallel, or one process). Checked before anything is built."""
    if cfg.tp == 1 and cfg.dp in (0, world):
        return None
    dp = cfg.dp or world // cfg.tp
    if dp * cfg.tp != world:
        raise ConfigError(
            f"--dp {cfg.dp or dp} x --tp {cfg.tp} = {dp * cfg.tp}, but this job has {world} rank(s); "
            f"fix: launch `shardflow run -n {dp * cfg.tp} ...` or choose --dp and --tp whose "
            f"product is {world}")
    return dp, cfg.tp


def _check_batch_split(cfg: TrainConfig, world: int, pipeline_dp, global_tensors) -> None:
    """The global batch must split evenly over the data-parallel ranks (the pipeline's own
    split was checked by ``check_pipeline_config``)."""
    if global_tensors is not None:
        dp_size = global_tensors[0]
        if cfg.batch_size % dp_size:
            raise ConfigError(
                f"--batch-size: got {cfg.batch_size}, which {dp_size} data-parallel ranks cannot "
                f"share evenly; fix: use a multiple of {dp_size}")
    elif cfg.batch_size % world and not pipeline_dp:
        raise ConfigError(
            f"--batch-size: got {cfg.batch_size}, which {world} ranks cannot share evenly (it is "
            f"the global batch; each rank trains on batch-size / world-size samples); fix: use a "
            f"multiple of {world}, e.g. {max(world, cfg.batch_size // world * world)}")


def shard_optimizer(cfg: TrainConfig, optimizer):
    """``--zero 1``: the same groups and hyper-parameters, the state sharded over the ranks
    (``ZeroRedundancyOptimizer``); else ``optimizer`` itself. Before resuming: it loads a
    whole optimizer state."""
    if cfg.zero != 1:
        return optimizer
    from shardflow.distributed.zero import ZeroRedundancyOptimizer
    from shardflow.optim.optimizer import constructor_kwargs

    return ZeroRedundancyOptimizer([dict(g) for g in optimizer.param_groups],
                                   type(optimizer), **constructor_kwargs(optimizer))


def apply_layout(cfg: TrainConfig, layout: Layout, raw_model, optimizer, signals):
    """``(model, pipe)``: the module the training step calls, and the pipeline step
    (``PipelineTraining``, which agrees on ``signals`` between ranks) or None. Runs after
    resuming: a resumed optimizer holds whole tensors, which this shards."""
    if layout.pipeline_dp:  # parallelize prints the communication plan (rank 0)
        from .pipeline import PipelineTraining

        return raw_model, PipelineTraining(cfg, raw_model, optimizer, layout.pipeline_dp, signals)
    if layout.global_tensors is not None:
        # Global tensors: parameters laid out over a (dp, tp) mesh (Megatron's split on tp,
        # broadcast on dp); every rank reads the whole global batch and keeps its S(0) part.
        from shardflow.distributed.full_state import shard_optimizer_state
        from shardflow.distributed.tensor_parallel import data_tensor_parallel

        dp, tp = layout.global_tensors
        mesh, data_sbp = data_tensor_parallel(raw_model, dp, tp, raw_model.tensor_parallel_plan())
        shard_optimizer_state(optimizer)  # a resumed optimizer holds whole tensors
        return _GlobalBatch(raw_model, mesh, data_sbp), None
    if cfg.zero >= 2:  # each block one unit, then the root (embeddings, head)
        from shardflow.distributed.fsdp import fully_shard
        from shardflow.distributed.full_state import shard_optimizer_state

        for block in getattr(getattr(raw_model, "transformer", None), "h", ()):
            fully_shard(block, reshard_after_forward=cfg.zero == 3)
        fully_shard(raw_model, reshard_after_forward=cfg.zero == 3)
        shard_optimizer_state(optimizer)  # a resumed optimizer holds whole tensors
        return raw_model, None
    if layout.world > 1:
        from shardflow.nn.parallel import DistributedDataParallel

        sfdata.note_data_parallel(True)
        return DistributedDataParallel(raw_model), None
    return raw_model, None


def describe_layout(cfg: TrainConfig, layout: Layout, pipe) -> str:
    """The layout's part of the job's first log line."""
    return ((f"; ZeRO stage {cfg.zero}" if cfg.zero else "")
            + (pipe.describe() if pipe else
               f" (global tensors: dp {layout.global_tensors[0]} x tp {layout.global_tensors[1]})"
               if layout.global_tensors is not None else
               f" ({cfg.batch_size // layout.world} of each batch of {cfg.batch_size} per rank)"
               if layout.world > 1 else ""))


class _GlobalBatch(nn.Module):
    """Feeds the whole global batch (the same on every rank) to a model whose parameters are
    global: the inputs are laid out ``data_sbp`` (S(0) over the data-parallel ranks)."""

    def __init__(self, model, mesh, data_sbp):
        super().__init__()
        self.module = model
        self._layout = (mesh, data_sbp)

    def forward(self, *inputs):
        from shardflow.distributed import sbp

        mesh, data_sbp = self._layout
        whole = [sbp.broadcast] * mesh.ndim
        return self.module(*(x.to_global(mesh, whole).to_global(sbp=data_sbp) for x in inputs))
