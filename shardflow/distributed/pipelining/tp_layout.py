"""Tensor parallelism inside a pipeline stage: lay one stage's parameters out over the
stage's tensor-parallel sub-mesh.

``lay_out_stage(root, stage_module, tp_mesh, plan)`` applies a tensor-parallel plan written for
the whole model (``GPT.tensor_parallel_plan()``: patterns on ``root.named_modules()`` paths,
such as ``"transformer.h.*.attn.c_attn"``) to the modules of ``root`` that belong to
``stage_module`` only, with each style laid out on ``tp_mesh`` itself (a 1-D sub-mesh that
leaves the other stages' ranks out), then makes every other parameter and buffer of the stage
``Broadcast`` there. Parameters of other stages are left alone (they are not used on this
rank). A pattern must match somewhere in ``root``, but may match nothing in this stage (a
stage of embeddings only).

A tied parameter (GPT's token embedding / LM head, held by the first and the last stage) gets
the same layout on both stages when the plan gives it one (``vocab_parallel``: ``S(0)`` on
each), so the tied-gradient all-reduce between TP rank ``t`` of both stages sums matching
shards.
"""

from __future__ import annotations

import fnmatch

from ..sbp import broadcast

__all__ = ["lay_out_stage"]


def lay_out_stage(root, stage_module, tp_mesh, plan) -> None:
    """Apply ``plan`` ({pattern: ParallelStyle}) to ``stage_module``'s part of ``root`` on
    ``tp_mesh`` (see the module docstring); communication: none (each rank keeps its shard)."""
    if tp_mesh.ndim != 1:
        raise ValueError(f"lay_out_stage needs a 1-D tensor-parallel mesh (mesh['tp']), got {tp_mesh}")
    mine = {id(m) for m in stage_module.modules()}
    names = dict(root.named_modules())
    work = []
    for pattern, style in (plan or {}).items():  # every pattern checked before any layout
        hits = [n for n in names if n and fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            raise ValueError(
                f"tensor-parallel plan: no submodule of the model matches {pattern!r}; module "
                f"paths look like {[n for n in names if n][:5]}"
            )
        work += [(names[n], style) for n in hits if id(names[n]) in mine]
    for module, style in work:
        style.apply(module, tp_mesh, 0)
    stage_module.to_global(tp_mesh, (broadcast,))
