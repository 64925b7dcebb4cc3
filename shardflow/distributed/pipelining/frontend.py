"""PyTorch's pipelining front end: ``pipeline(module, mb_args, split_spec=...)`` -> ``Pipe``,
``pipe.build_stage(stage_index, device)``, ``build_stage``, ``SplitPoint``.

PyTorch splits a model by tracing it with ``torch.export`` into a graph and cutting the
graph at the split points. shardflow has no tracer on this path; it *records* one forward
of the model on ``mb_args`` (forward pre-hooks and hooks on every submodule, gradients off,
the random state and the buffers restored afterwards) and splits the model where that
forward is a *chain of submodule calls*:

* the root's forward must call submodules one after the other, each taking the previous
  one's output (the very tensor object) as its positional arguments -- once, or several
  times, as the pipelining tutorial's ``layer(h, h)`` (a ``TransformerDecoderLayer`` given
  ``h`` as target and memory) -- the first taking the model's input and the last one's
  output being the model's output, e.g. ``h = self.tok_embeddings(x); for layer in
  self.layers: h = layer(h); return self.output(self.norm(h))``. The model may return a copy
  of that output (the tutorial's ``self.output(h).clone()``): an output that is another
  tensor with the recorded values of the last call's output is taken for a copy, so an op
  that happened to change no value on ``mb_args`` would be dropped (torch's tracer keeps it);
* a call that contains a split point (a submodule named in ``split_spec`` or a
  ``pipe_split()`` call inside its forward) is opened up the same way: its forward must be a
  chain of its own submodule calls (``nn.Sequential`` is).

``split_spec={"layers.2": SplitPoint.BEGINNING}`` starts a new stage at the call of
``layers.2``; ``SplitPoint.END`` starts it after that call; ``pipe_split()`` called inside a
forward (PyTorch's marker) cuts at that point of the chain. A forward that computes outside
submodules between two calls (a residual add, ``h * scale``, a reshape) is refused with the
two calls named: write that part as a submodule, or build the stages by hand with
``PipelineStage(submodule, stage_index, num_stages, device)``. Parameters that two stages
share (tied embeddings) are found by identity; the schedules sum their gradients
(``Pipe.tied``, ``split.py``).

Each stage is a module that keeps the original names of the submodules it holds (its
``state_dict`` keys are the model's), and runs them in the recorded order.
"""

from __future__ import annotations

import enum

import numpy as np

from ... import nn
from ...autograd import grad_mode
from ...autograd.tensor import Tensor
from ...backend import random as _random
from .split import _RECORDERS, Pipe, PipeInfo, PipeSplit, _find_tied
from .stage import PipelineStage

__all__ = ["SplitPoint", "pipeline", "build_stage", "PipeInfo"]


class SplitPoint(enum.Enum):
    """Where ``split_spec`` cuts: before (``BEGINNING``) or after (``END``) the named call."""

    BEGINNING = 1
    END = 2


class _Call:
    """One recorded submodule call (or, with ``module=None``, a ``pipe_split()`` marker)."""

    __slots__ = ("name", "module", "args", "output", "children")

    def __init__(self, name, module, args):
        self.name, self.module, self.args = name, module, args
        self.output = None
        self.children: list[_Call] = []

    @property
    def is_marker(self) -> bool:
        """A ``pipe_split()`` call, or a ``PipeSplit`` module in an ``nn.Sequential``."""
        return self.module is None or isinstance(self.module, PipeSplit)


class _Recorder:
    """Builds the call tree of one forward from the hooks (and ``pipe_split()`` markers)."""

    def __init__(self, root_call: _Call):
        self.stack = [root_call]

    def enter(self, name, module, args):
        call = _Call(name, module, args)
        self.stack[-1].children.append(call)
        self.stack.append(call)

    def leave(self, output):
        self.stack.pop().output = output

    def mark(self):
        self.stack[-1].children.append(_Call("pipe_split()", None, ()))


def _record(module, mb_args, mb_kwargs) -> _Call:
    """The call tree of ``module(*mb_args, **mb_kwargs)``, leaving no trace (no graph, the
    random state and every buffer as before)."""
    root = _Call("", module, tuple(mb_args))
    rec = _Recorder(root)
    handles = []
    for name, sub in module.named_modules():
        if sub is module:
            continue
        handles.append(sub.register_forward_pre_hook(
            lambda m, args, _n=name: rec.enter(_n, m, args)))
        handles.append(sub.register_forward_hook(
            lambda m, args, out: rec.leave(out), always_call=True))
    rng = _random.get_rng_state()
    buffers = [(b, b.array.copy()) for b in module.buffers()]
    _RECORDERS.append(rec)
    try:
        with grad_mode.no_grad():
            root.output = module(*mb_args, **(mb_kwargs or {}))
    finally:
        _RECORDERS.pop()
        for h in handles:
            h.remove()
        _random.set_rng_state(rng)
        for b, saved in buffers:
            b.array[...] = saved
    return root


def _contains(call: _Call, names: set) -> bool:
    return any(c.is_marker or c.name in names or _contains(c, names) for c in call.children)


def _flatten(call: _Call, spec: dict) -> list:
    """``call``'s forward as a chain: a list of unit calls and ``None`` (a cut)."""
    calls = [c for c in call.children if not c.is_marker]
    what = f"'{call.name}'" if call.name else "the model"
    if not calls:
        raise ValueError(f"pipeline(): {what} contains a split point but calls no submodule "
                         "to cut between")
    _check_chain(call, calls, what)
    items: list = []
    for c in call.children:
        if c.is_marker:
            items.append(None)
            continue
        if spec.get(c.name) is SplitPoint.BEGINNING:
            items.append(None)
        if _contains(c, set(spec)):
            items.extend(_flatten(c, spec))
        else:
            items.append(c)
        if spec.get(c.name) is SplitPoint.END:
            items.append(None)
    return items


def _single_tensor(args):
    return args[0] if len(args) == 1 and isinstance(args[0], Tensor) else None


def _chain_input(args):
    """The tensor a chain call takes: its positional arguments, all one tensor object (``h``
    of ``layer(h)`` or ``layer(h, h)``); None otherwise."""
    if args and isinstance(args[0], Tensor) and all(a is args[0] for a in args):
        return args[0]
    return None


def _is_copy(out, last) -> bool:
    """``out`` is ``last`` or a copy of it (``last.clone()``): same shape, dtype, values."""
    if out is last:
        return True
    return (isinstance(out, Tensor) and out.shape == last.shape and out.dtype == last.dtype
            and bool(np.array_equal(out.detach().numpy(), last.detach().numpy(), equal_nan=True)))


def _check_chain(call: _Call, calls: list, what: str) -> None:
    fix = ("write that computation as a submodule, or build the stages by hand with "
           "PipelineStage(submodule, stage_index, num_stages, device)")
    for c in calls:
        if _chain_input(c.args) is None or not isinstance(c.output, Tensor):
            raise ValueError(
                f"pipeline(): '{c.name}' takes {len(c.args)} positional argument(s) that are not "
                "all one tensor, or does not return one tensor; shardflow cuts a model only "
                "where its forward is a chain of submodules that each take one tensor (once or "
                f"repeated, as layer(h, h)) and return one tensor; {fix}"
            )
    if _single_tensor(call.args) is not calls[0].args[0]:
        raise ValueError(f"pipeline(): {what} computes on its input before calling "
                         f"'{calls[0].name}' (or passes it something else); {fix}")
    for a, b in zip(calls, calls[1:]):
        if b.args[0] is not a.output:
            raise ValueError(
                f"pipeline(): between '{a.name}' and '{b.name}' {what} computes outside a "
                f"submodule (or calls '{b.name}' on something other than '{a.name}''s output); "
                f"the forward is not a chain there; {fix}"
            )
    if not _is_copy(call.output, calls[-1].output):
        raise ValueError(f"pipeline(): {what} computes on the output of '{calls[-1].name}' "
                         f"before returning it (a copy, .clone(), is allowed); {fix}")


class _ChainStage(nn.Module):
    """One stage: the recorded calls of its part of the chain, run in order. Submodules are
    registered under their original dotted names (intermediate containers are plain
    Modules), so the stage's parameter names are the model's."""

    def __init__(self, calls: list):
        super().__init__()
        self._chain_names = [c.name for c in calls]
        self._chain_arity = [len(c.args) for c in calls]  # layer(h, h): h passed twice
        for c in calls:
            parent = self
            *path, leaf = c.name.split(".")
            for part in path:
                if part not in parent._modules:
                    parent.add_module(part, nn.Module())
                parent = parent._modules[part]
            parent.add_module(leaf, c.module)

    def forward(self, x):
        for name, arity in zip(self._chain_names, self._chain_arity, strict=True):
            x = self.get_submodule(name)(*([x] * arity))
        return x


def pipeline(module, mb_args, mb_kwargs=None, split_spec=None, split_policy=None) -> Pipe:
    """PyTorch's ``pipeline``: split ``module`` at ``split_spec`` (``{"layers.4":
    SplitPoint.BEGINNING}``) and/or its ``pipe_split()`` calls into a :class:`Pipe` (see
    the module docstring for what shardflow can split). ``mb_args`` is one micro-batch's
    positional input (a tuple)."""
    if split_policy is not None:
        raise NotImplementedError("pipeline(split_policy=) is not supported; pass split_spec= "
                                  "or call pipe_split() in the forward")
    if not isinstance(mb_args, tuple):
        mb_args = (mb_args,)
    spec = dict(split_spec or {})
    known = dict(module.named_modules())
    for name, point in spec.items():
        if name not in known or not name:
            raise ValueError(f"pipeline(): split_spec names '{name}', which is not a submodule "
                             f"of {type(module).__name__}")
        if not isinstance(point, SplitPoint):
            raise TypeError(f"pipeline(): split_spec['{name}'] must be SplitPoint.BEGINNING or "
                            f"SplitPoint.END, got {point!r}")
    root = _record(module, mb_args, mb_kwargs)
    called = set()

    def walk(c):
        for ch in c.children:
            called.add(ch.name)
            walk(ch)

    walk(root)
    missing = [n for n in spec if n not in called]
    if missing:
        raise ValueError(f"pipeline(): the forward never calls {missing}; split at modules the "
                         "forward calls")
    if not _contains(root, set(spec)):
        raise ValueError("pipeline(): no split point: pass split_spec={'layers.N': "
                         "SplitPoint.BEGINNING} or call pipe_split() in the forward")
    groups, cur = [], []
    for item in _flatten(root, spec):
        if item is None:
            if cur:
                groups.append(cur)
            cur = []
        else:
            cur.append(item)
    if cur:
        groups.append(cur)
    stages = [_ChainStage(g) for g in groups]
    return Pipe(stages, _find_tied(stages))


def build_stage(stage_module, stage_index: int, pipe_info: PipeInfo, device=None,
                group=None) -> PipelineStage:
    """PyTorch's ``build_stage(stage_module, stage_index, pipe.info(), device, group)``."""
    return pipe_info.build(stage_module, stage_index, device, group)
