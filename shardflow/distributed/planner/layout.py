"""A parallel layout (dp x tp x pp, ZeRO stage, micro-batches, recomputation, schedule), the
rules that make one valid, and the enumeration of every valid layout for a world size.

Which layouts are *runnable* depends on the entry point that will run them:

* ``"parallelize"`` -- ``shardflow.parallelize``: what ``validate_parallel_config`` accepts
  (dp x tp on global tensors, dp x tp x pp with ``pp > 1``, ZeRO-1 with dp only), no
  recomputation; data parallelism runs on global tensors, their gradients (partial sums over
  dp) summed in one reducer's buckets during backward (``grad_sync="global-bucketed"``);
* ``"train"`` -- ``shardflow train gpt``: the same, plus ZeRO 2/3 (``fully_shard``) with dp
  only, and plain data parallelism either as ``DistributedDataParallel`` (bucketed,
  overlapped with backward: ``grad_sync="bucketed"``) or on global tensors;
* ``"any"`` -- what the cost model can express, for clusters simulated only (the virtual
  cluster): recomputation, the interleaved 1F1B schedule, ZeRO-1 with tp/pp.

``grad_sync`` names how the data-parallel gradients are reduced, because the same logical
layout costs differently under each: ``"bucketed"`` (DDP: flat buckets all-reduced as
backward produces them), ``"global-bucketed"`` (global tensors laid out by
``data_tensor_parallel``: the parameters' partial gradients in the same buckets, plus one
blocking all-reduce per use of a broadcast activation), ``"per-use"`` (global tensors with
no reducer: one all-reduce per use of every broadcast tensor, in its backward, blocking), ``"after-backward"`` (pipeline stages: one
all-reduce per parameter after the last micro-batch's backward), ``"sharded"`` (ZeRO 2/3:
reduce-scatter per ``fully_shard`` unit, overlapped). It is derived from the layout and the
entry point (:func:`grad_sync_of`) unless a simulated run states it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

__all__ = ["Layout", "ModelShape", "invalid_reason", "enumerate_layouts", "grad_sync_of",
           "ENTRIES", "SCHEDULES"]

ENTRIES = ("parallelize", "train", "any")
SCHEDULES = ("1f1b", "gpipe", "interleaved")


@dataclass(frozen=True)
class ModelShape:
    """What validity depends on: the model's layer and head counts (None: no constraint)."""

    n_layer: int | None = None
    n_head: int | None = None


@dataclass(frozen=True)
class Layout:
    """One parallel layout. ``microbatches`` per step per pipeline (1 without a pipeline);
    ``virtual`` model chunks per pipeline rank (the interleaved schedule's ``v``)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    zero: int = 0
    microbatches: int = 1
    recompute: bool = False
    schedule: str = "1f1b"
    virtual: int = 1
    grad_sync: str = ""  # derived by grad_sync_of() when empty

    @property
    def world(self) -> int:
        return self.dp * self.tp * self.pp

    def with_sync(self, entry: str) -> Layout:
        return self if self.grad_sync else replace(self, grad_sync=grad_sync_of(self, entry))

    def describe(self) -> str:
        parts = [f"dp{self.dp}", f"tp{self.tp}", f"pp{self.pp}"]
        if self.zero:
            parts.append(f"z{self.zero}")
        if self.pp > 1:
            parts.append(f"m{self.microbatches}")
            if self.schedule != "1f1b":
                parts.append(self.schedule + (f"{self.virtual}" if self.schedule == "interleaved" else ""))
        if self.recompute:
            parts.append("rc")
        if self.grad_sync == "bucketed" and self.dp > 1 and self.zero == 0:
            parts.append("ddp")
        return " ".join(parts)

    def flags(self) -> str:
        """The ``shardflow train`` flags that run this layout."""
        f = []
        if self.pp > 1:
            f += [f"--pp {self.pp}", f"--microbatches {self.microbatches}"]
            if self.schedule != "1f1b":
                f.append(f"--schedule {self.schedule}")
        if self.tp > 1:
            f.append(f"--tp {self.tp}")
        if self.dp > 1 and (self.tp > 1 or self.pp > 1 or self.grad_sync in GLOBAL_SYNCS):
            f.append(f"--dp {self.dp}")
        if self.zero:
            f.append(f"--zero {self.zero}")
        return " ".join(f)


# the data-parallel reductions of global tensors (their layouts run with --dp)
GLOBAL_SYNCS = ("per-use", "global-bucketed")


def grad_sync_of(layout: Layout, entry: str) -> str:
    """How the data-parallel gradients of ``layout`` are reduced under ``entry`` (module
    docstring); for dp-only ZeRO-0 under ``"train"``/``"any"`` the default is DDP's."""
    if layout.pp > 1:
        return "after-backward"
    if layout.zero >= 2:
        return "sharded"
    if layout.zero == 1:
        return "bucketed"  # ZeroRedundancyOptimizer keeps DDP's all-reduce
    if layout.tp > 1 or entry == "parallelize":
        return "global-bucketed"
    return "bucketed"


def invalid_reason(layout: Layout, world: int, shape: ModelShape, batch_size: int | None,
                   entry: str = "parallelize") -> str | None:
    """Why ``layout`` cannot run (one sentence naming the rule), or None when it can."""
    if entry not in ENTRIES:
        raise ValueError(f"entry must be one of {ENTRIES}, got {entry!r}")
    L = layout
    for name in ("dp", "tp", "pp", "microbatches", "virtual"):
        v = getattr(L, name)
        if not isinstance(v, int) or v < 1:
            return f"{name} must be a positive integer, got {v!r}"
    if L.world != world:
        return f"dp x tp x pp = {L.world}, not the {world} ranks"
    if L.zero not in (0, 1, 2, 3):
        return f"zero must be 0..3, got {L.zero}"
    if L.schedule not in SCHEDULES:
        return f"schedule must be one of {SCHEDULES}, got {L.schedule!r}"
    if shape.n_head is not None and shape.n_head % L.tp:
        return f"tp={L.tp} does not divide the {shape.n_head} attention heads"
    stages = L.pp * (L.virtual if L.schedule == "interleaved" else 1)
    if shape.n_layer is not None and shape.n_layer % stages:
        return f"{stages} pipeline stages do not divide the {shape.n_layer} layers"
    if L.pp == 1 and (L.schedule != "1f1b" or L.virtual != 1):
        return "schedules are for pipelines (pp > 1)"
    if L.pp == 1 and L.microbatches != 1 and entry != "any":
        return f"gradient accumulation (micro-batches without a pipeline) is not wired into {entry}"
    if L.schedule == "interleaved" and (L.virtual < 2 or L.microbatches % L.pp):
        return "the interleaved schedule needs virtual >= 2 chunks and micro-batches a multiple of pp"
    if L.schedule != "interleaved" and L.virtual != 1:
        return "virtual chunks need the interleaved schedule"
    if batch_size is not None and batch_size % (L.dp * L.microbatches):
        return (f"the global batch {batch_size} does not split into dp={L.dp} x "
                f"{L.microbatches} micro-batches")
    if entry == "any":
        if L.zero >= 2 and (L.tp > 1 or L.pp > 1):
            return "ZeRO-2/3 with tensor or pipeline parallelism is not modelled"
        if L.zero and L.dp == 1:
            return "ZeRO shards over data-parallel ranks: dp must be > 1"
        return None
    # the two runnable entry points
    if L.recompute:
        return f"activation recomputation is not wired into {entry}"
    if L.schedule == "interleaved":
        return f"the interleaved schedule is not reachable through {entry} (docs/PIPELINE.md)"
    if L.zero and (L.tp > 1 or L.pp > 1):
        return "zero with tp or pp is not wired (ZeRO shards over plain data-parallel ranks)"
    if L.zero and L.dp == 1:
        return "ZeRO shards over data-parallel ranks: dp must be > 1"
    if L.zero >= 2 and entry == "parallelize":
        return f"zero={L.zero} is not wired into parallelize (shardflow train --zero {L.zero} runs it)"
    if L.grad_sync == "bucketed" and entry == "parallelize" and L.zero == 0:
        return "parallelize runs plain data parallelism on global tensors, not DDP"
    return None


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_layouts(world: int, shape: ModelShape, batch_size: int | None,
                      entry: str = "parallelize", *, microbatches=None, recompute=(False,),
                      schedules=("1f1b",), zero=(0, 1, 2, 3), virtual=(2,)):
    """``(valid, refused)``: every layout of ``world`` ranks over the given option sets, the
    valid ones (with ``grad_sync`` filled in) and ``[(layout, reason)]`` for the others.

    ``microbatches`` is the set tried for ``pp > 1`` (default: pp, 2pp, 4pp). Under
    ``"train"``/``"any"`` plain data parallelism appears twice, as DDP and on global tensors.
    """
    valid, refused = [], []
    for dp, tp in itertools.product(_divisors(world), repeat=2):
        if world % (dp * tp):
            continue
        pp = world // (dp * tp)
        ms = [1] if pp == 1 else sorted(set(microbatches or (pp, 2 * pp, 4 * pp)))
        scheds = ["1f1b"] if pp == 1 else list(schedules)
        for z, m, rc, sc in itertools.product(zero, ms, recompute, scheds):
            vs = virtual if sc == "interleaved" else (1,)
            for v in vs:
                base = Layout(dp, tp, pp, z, m, rc, sc, v)
                syncs = [grad_sync_of(base, entry)]
                if dp > 1 and tp == 1 and pp == 1 and z == 0 and entry != "parallelize":
                    syncs = ["bucketed", "global-bucketed"]
                for s in syncs:
                    L = replace(base, grad_sync=s)
                    why = invalid_reason(L, world, shape, batch_size, entry)
                    (refused.append((L, why)) if why else valid.append(L))
    return valid, refused
