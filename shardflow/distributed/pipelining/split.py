"""Splitting a model into pipeline stages: ``pipe_split()`` markers and ``split_module``.

A pipeline needs the model as a chain ``x -> f_0 -> f_1 -> ... -> y``. Here that chain is an
``nn.Sequential`` (any model that can be written as one: ``shardflow.models.gpt_pipeline``
turns GPT into embedding, blocks, head). Two ways to cut it, both giving a :class:`Pipe`:

* markers: put ``pipe_split()`` modules into the Sequential where a stage ends
  (PyTorch's ``pipe_split()`` is a call inside ``forward`` found by tracing; shardflow has no
  tracer on this path, so the marker is an identity module in the chain);
* boundaries: ``split_module(seq, [2, 4])`` cuts before children 2 and 4 (three stages);
* PyTorch's front end, ``pipeline(model, mb_args, split_spec=...)`` (``frontend.py``), which
  records one forward and also honours ``pipe_split()`` *called* inside a forward, as
  PyTorch's marker is.

Parameters shared between stages (GPT ties the token embedding to the LM head) are found by
identity and listed in ``Pipe.tied``; the schedules sum their gradients between the stages
that hold them (Megatron's embedding all-reduce), so every copy gets the whole gradient.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import nn
from .stage import PipelineStage

__all__ = ["PipeSplit", "pipe_split", "split_module", "Pipe", "PipeInfo"]

# The recorders of ``frontend.pipeline`` while it runs a forward: a ``pipe_split()`` call made
# then marks a cut at that point of the forward (PyTorch's in-forward marker).
_RECORDERS: list = []


class PipeSplit(nn.Module):
    """Identity marker: a stage boundary inside an ``nn.Sequential``."""

    def forward(self, x):
        return x


def pipe_split() -> PipeSplit:
    """A stage-boundary marker: place the returned module in an ``nn.Sequential``, or call
    ``pipe_split()`` inside a ``forward`` (PyTorch's way) for ``pipeline()`` to cut there
    (see the module docstring); at other times the call does nothing."""
    if _RECORDERS:
        _RECORDERS[-1].mark()
    return PipeSplit()


@dataclass
class Pipe:
    """The stages of a split model and the parameters they share.

    ``stages[i]`` is an ``nn.Sequential`` (stage ``i``'s part of the chain); ``tied`` lists
    ``(stage_a, name_a, stage_b, name_b)`` for each parameter object two stages share.
    """

    stages: list
    tied: list = field(default_factory=list)

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    def tied_for(self, stage_index: int) -> list:
        """``[(param_name, other_stage), ...]`` of this stage's shared parameters."""
        out = []
        for a, na, b, nb in self.tied:
            if a == stage_index:
                out.append((na, b))
            elif b == stage_index:
                out.append((nb, a))
        return out

    # PyTorch's Pipe API
    def get_stage_module(self, stage_idx: int):
        return self.stages[stage_idx]

    def info(self) -> PipeInfo:
        return PipeInfo(self)

    def build_stage(self, stage_index: int, device=None, group=None):
        """PyTorch's ``pipe.build_stage(stage_index, device, group=None)``: the
        :class:`~.stage.PipelineStage` of stage ``stage_index`` (its module moved to ``device``),
        with the parameters it shares with other stages."""
        return self.info().build(self.stages[stage_index], stage_index, device, group)


class PipeInfo:
    """What building a stage needs to know of the whole pipe (PyTorch's ``pipe.info()``)."""

    def __init__(self, pipe: Pipe):
        self.num_stages = pipe.num_stages
        self.has_loss_and_backward = True
        self._pipe = pipe

    def build(self, stage_module, stage_index: int, device=None, group=None):
        if device is not None:
            stage_module.to(device)
        return PipelineStage(stage_module, stage_index, self.num_stages, device, group,
                             tied=self._pipe.tied_for(stage_index))


def _children(model) -> list:
    if not isinstance(model, nn.Sequential):
        raise TypeError(
            f"split_module expects an nn.Sequential (the model as a chain of modules), got "
            f"{type(model).__name__}; write the model as a Sequential (for GPT: "
            "shardflow.models.gpt_pipeline.gpt_sequential(model))"
        )
    return list(model.children())


def split_module(model, boundaries=None) -> Pipe:
    """Cut an ``nn.Sequential`` into stages at ``boundaries`` (child indices where a new stage
    starts) or, when ``boundaries`` is None, at its ``pipe_split()`` markers."""
    children = _children(model)
    if boundaries is None:
        groups, cur = [], []
        for c in children:
            if isinstance(c, PipeSplit):
                groups.append(cur)
                cur = []
            else:
                cur.append(c)
        groups.append(cur)
        if len(groups) == 1:
            raise ValueError("split_module: the Sequential has no pipe_split() marker and no "
                             "boundaries were given; pass boundaries=[i, ...] or add markers")
    else:
        b = [int(i) for i in boundaries]
        if b != sorted(set(b)) or (b and (b[0] <= 0 or b[-1] >= len(children))):
            raise ValueError(
                f"split_module: boundaries must be strictly increasing child indices in "
                f"1 .. {len(children) - 1} (the model has {len(children)} children), got {list(boundaries)}"
            )
        edges = [0, *b, len(children)]
        groups = [children[edges[i]:edges[i + 1]] for i in range(len(edges) - 1)]
    empty = [i for i, g in enumerate(groups) if not g]
    if empty:
        raise ValueError(f"split_module: stage(s) {empty} would be empty; move the markers")
    stages = [nn.Sequential(*g) for g in groups]
    return Pipe(stages, _find_tied(stages))


def _find_tied(stages) -> list:
    owner: dict = {}
    tied = []
    for s, mod in enumerate(stages):
        for name, p in mod.named_parameters():
            if id(p) in owner and owner[id(p)][0] != s:
                a, na = owner[id(p)]
                tied.append((a, na, s, name))
            else:
                owner.setdefault(id(p), (s, name))
    return tied


def even_boundaries(n_items: int, num_stages: int, first: int = 0) -> list:
    """Child indices that give ``num_stages`` stages of ``n_items`` equal items, the items
    starting at child ``first`` (raises when they do not divide)."""
    if n_items % num_stages:
        raise ValueError(f"{n_items} layers do not divide into {num_stages} pipeline stages; "
                         f"use a number of stages that divides {n_items}")
    per = n_items // num_stages
    return [first + per * i for i in range(1, num_stages)]
