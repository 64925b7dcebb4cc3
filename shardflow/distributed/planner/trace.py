"""The step trace: what one training step of a model does, op by op, from one small run.

Why a run on a tiny batch and not a table of known models, nor a meta device: shardflow has
no meta device yet, and the cost of every op follows from its *shapes* alone, which a forward
on a batch of one or two samples produces exactly (the compute is negligible at that size).
So :func:`trace_step` runs ``loss = step_loss(model, inputs)`` and ``loss.backward()`` once
with an op hook in the dispatch slot the profiler uses (``autograd.dispatch.set_op_profiler``;
refused while a profile records), and records each *top-level* op call (ops called inside
another op belong to it):

* the op's registered name, the shapes of its tensor inputs and outputs, and the scalars that
  change its cost (``is_causal``, ``groups``, ``stride`` ...);
* the module path it ran in (forward pre/post hooks on every module) and its index in the
  *layer stack* (the longest ``ModuleList`` of one block class: GPT's ``transformer.h``);
* which inputs are parameters (by name), which tensors depend on the batch (the inputs do;
  an op's outputs do when any input does), and which inputs need their gradient reduced over
  data-parallel ranks when the batch is split (an input that requires grad but does not
  depend on the batch, used by an op whose output does: ``BroadcastUse``'s rule on global
  tensors, ``docs/GLOBAL.md``);
* memory from ``tracemalloc`` (NumPy reports its allocations to it): the bytes an op leaves
  allocated, less those of its outputs that are freed before the forward ends (an output
  only a later op reads, that no backward saves: the residual branch's projection before
  its add), rescaled so that their sum is the measured growth over the forward (what
  autograd keeps for backward), and the op's transient peak over its start; for the whole
  backward, its peak over the level at the end of forward. (Counting the freed outputs
  put memory on ops a tensor-parallel plan leaves whole that belongs to the ones it splits:
  tp layouts were predicted 4-6% high.)

:mod:`.scaling` turns traces at a few small sizes into the trace at any size, and
:func:`assign_tp_roles` marks the ops a tensor-parallel plan splits.
"""

from __future__ import annotations

import fnmatch
import gc
import math
import tracemalloc
import weakref
from dataclasses import dataclass, field

from ...autograd import dispatch
from ...autograd.tensor import Tensor
from ...backend import random as _random
from ...comm import profiling as _profiling

__all__ = ["OpRecord", "ParamRecord", "StepTrace", "trace_step", "assign_tp_roles", "layer_stack"]

# scalars kept per op (they change the cost, not the shapes)
_KEPT_KWARGS = ("is_causal", "groups", "stride", "padding", "dilation", "kernel_size", "p",
                "training", "dim", "reduction")


@dataclass
class OpRecord:
    name: str
    in_shapes: list  # shape tuple per flattened tensor input (positional, then keyword)
    out_shapes: list  # shape tuple per tensor output
    itemsize: int  # bytes per element of its floating tensors (4 in a float32 trace)
    module: str  # innermost module path ("" at top level)
    layer: int | None  # index in the layer stack, None outside it
    params: dict  # input position -> parameter name
    needs_grad: bool  # its output requires grad (it has a backward)
    inputs_grad: list  # per input: requires grad
    batch_dep: bool  # its output depends on the batch
    dp_reduce: list  # input positions whose gradient is all-reduced over dp (per use)
    kw: dict = field(default_factory=dict)
    retained: float = 0.0  # bytes it leaves allocated at the end of forward (rescaled)
    transient: float = 0.0  # its peak over its start, bytes
    in_ids: list = field(default_factory=list, repr=False)  # trace-local tensor serials
    out_ids: list = field(default_factory=list, repr=False)
    tp_role: str = ""  # "col", "row", "split" or "" (assign_tp_roles)


@dataclass
class ParamRecord:
    name: str
    shape: tuple
    layer: int | None
    module: str
    itemsize: int = 4
    tp_role: str = ""  # "col" (split on dim 0), "row" (split on dim 1 of a weight), ""


@dataclass
class StepTrace:
    """One traced step: ops in call order, parameters (tied ones once), the layer count,
    and whole-step memory figures (bytes)."""

    ops: list
    params: list
    n_layers: int  # length of the layer stack (0: none found)
    stack_path: str  # e.g. "transformer.h"
    forward_retained: float  # growth of traced memory over the forward
    backward_extra: float  # backward's peak over the level at the end of forward
    grad_bytes: float  # bytes of parameter gradients at the end of backward
    batch: int = 1  # samples in the traced batch
    # backward_extra = bwd_fixed + bwd_per_act * (largest tensor an op keeps): set by
    # ModelTrace.at (scaling.py); a direct trace leaves it all in bwd_fixed
    bwd_fixed: float = 0.0
    bwd_per_act: float = 0.0

    def param_bytes(self) -> float:
        return sum(math.prod(p.shape) * p.itemsize for p in self.params)

    def n_params(self) -> int:
        return sum(math.prod(p.shape) for p in self.params)


def layer_stack(model) -> tuple[str, list]:
    """``(path, blocks)`` of the longest ``ModuleList`` whose children share one class
    (GPT's ``transformer.h``, BERT's encoder layers); ``("", [])`` when there is none."""
    from ...nn.modules.container import ModuleList

    best = ("", [])
    for name, mod in model.named_modules():
        if isinstance(mod, ModuleList):
            kids = list(mod.children())
            if kids and len({type(k) for k in kids}) == 1 and len(kids) > len(best[1]):
                best = (name, kids)
    return best


def _flat_tensors(args, kwargs):
    out = []
    for a in [*args, *kwargs.values()]:
        if isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, list | tuple):
            out.extend(x for x in a if isinstance(x, Tensor))
    return out


def _outputs(out):
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, list | tuple):
        return [x for x in out if isinstance(x, Tensor)]
    return []


def _root(a):
    """The array that owns ``a``'s memory (``a`` itself unless it is a view)."""
    while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
        a = a.base
    return a


def _itemsize(ts) -> int:
    for t in ts:
        a = t.array
        if a.dtype.kind == "f" or a.dtype.kind == "V":
            return int(a.dtype.itemsize)
    return 4


class _Tracer:
    def __init__(self, model, inputs, stack_path):
        self.model = model
        self.ops: list[OpRecord] = []
        self.out_refs: list[list] = []  # per op: (weakref to an output's root array, bytes)
        self.depth = 0
        self.modules: list[str] = []
        self.serial: dict[int, int] = {}  # id(tensor) -> serial, while the tensor lives
        self._refs = {}
        self.next_serial = 0
        self.batch_serials: set[int] = set()
        self.param_names = {}
        for name, p in model.named_parameters():
            self.param_names.setdefault(id(p), name)
        self.stack_prefix = stack_path + "." if stack_path else None
        for t in inputs:
            if isinstance(t, Tensor):
                self.batch_serials.add(self._serial(t))

    def _serial(self, t) -> int:
        k = id(t)
        s = self.serial.get(k)
        if s is None:
            s = self.serial[k] = self.next_serial
            self.next_serial += 1
            self._refs[k] = weakref.ref(t, lambda _r, k=k: (self.serial.pop(k, None), self._refs.pop(k, None)))
        return s

    def _watch_outputs(self, ins, outs) -> None:
        """Weak references to the storage this op's outputs allocated (their root arrays,
        not an input's: a view allocates nothing), to learn at the end of forward which
        were freed (:meth:`freed_bytes`)."""
        in_roots = {id(_root(t.array)) for t in ins}
        refs = []
        for t in outs:
            r = _root(t.array)
            if id(r) not in in_roots:
                try:
                    refs.append((weakref.ref(r), int(r.nbytes)))
                except TypeError:  # an array type without weak references: assume kept
                    pass
        self.out_refs.append(refs)

    def freed_bytes(self) -> list[float]:
        """Per recorded op, the bytes of its outputs' storage freed since it ran."""
        return [float(sum(n for ref, n in refs if ref() is None)) for refs in self.out_refs]

    def _layer(self, path: str):
        if self.stack_prefix and path.startswith(self.stack_prefix):
            head = path[len(self.stack_prefix):].split(".", 1)[0]
            if head.isdigit():
                return int(head)
        return None

    def hook(self, name, func, args, kwargs):
        if self.depth:
            self.depth += 1
            try:
                return func(*args, **kwargs)
            finally:
                self.depth -= 1
        ins = _flat_tensors(args, kwargs)
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        self.depth = 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.depth = 0
        cur, peak = tracemalloc.get_traced_memory()
        outs = _outputs(out)
        self._watch_outputs(ins, outs)
        in_ids = [self._serial(t) for t in ins]
        batch_dep = any(s in self.batch_serials for s in in_ids)
        out_ids = [self._serial(t) for t in outs]
        if batch_dep:
            self.batch_serials.update(out_ids)
        needs_grad = any(t.requires_grad for t in outs)
        inputs_grad = [bool(t.requires_grad) for t in ins]
        dp_reduce = [i for i, t in enumerate(ins)
                     if batch_dep and t.requires_grad and in_ids[i] not in self.batch_serials]
        params = {i: self.param_names[id(t)] for i, t in enumerate(ins) if id(t) in self.param_names}
        kw = {k: kwargs[k] for k in _KEPT_KWARGS if k in kwargs and isinstance(kwargs[k], int | float | bool | str | tuple)}
        path = self.modules[-1] if self.modules else ""
        self.ops.append(OpRecord(
            name=name, in_shapes=[tuple(t.shape) for t in ins], out_shapes=[tuple(t.shape) for t in outs],
            itemsize=_itemsize(outs or ins), module=path, layer=self._layer(path), params=params,
            needs_grad=needs_grad, inputs_grad=inputs_grad, batch_dep=batch_dep, dp_reduce=dp_reduce,
            kw=kw, retained=float(cur - before), transient=float(max(0, peak - before)),
            in_ids=in_ids, out_ids=out_ids))
        return out


def trace_step(model, inputs, step_loss, batch: int = 1) -> StepTrace:
    """Trace one forward + backward of ``step_loss(model, inputs) -> loss`` (module
    docstring), after one untraced warm-up step. ``inputs`` are the tensors that carry the
    batch; ``batch`` their sample count. The model's gradients are cleared afterwards and the
    global random state is restored (dropout in the traced steps does not move the run's)."""
    if _profiling.current is not None:
        raise RuntimeError("trace_step: a shardflow.profiler profile is recording; the planner's "
                           "trace uses the same op hook slot. Trace outside the profile.")
    stack_path, blocks = layer_stack(model)
    tracer = _Tracer(model, inputs, stack_path)
    handles = []
    named = {id(m): n for n, m in model.named_modules()}

    def pre(mod, _args):
        tracer.modules.append(named.get(id(mod), ""))

    def post(mod, _args, _out):
        if tracer.modules:
            tracer.modules.pop()

    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    rng_state = _random.get_rng_state()  # tracing must not move the run's random stream
    # warm-up: first calls import, compile and cache; their allocations are not the step's
    step_loss(model, inputs).backward()
    for p in model.parameters():
        p.grad = None
    was_tracing = tracemalloc.is_tracing()
    gc.collect()
    if not was_tracing:
        tracemalloc.start()
    dispatch.set_op_profiler(tracer.hook)
    try:
        start = tracemalloc.get_traced_memory()[0]
        loss = step_loss(model, inputs)
        dispatch.set_op_profiler(None)
        end_fwd = tracemalloc.get_traced_memory()[0]
        gc.collect()  # outputs only a reference cycle held are freed, as they would be
        end_fwd = min(end_fwd, tracemalloc.get_traced_memory()[0])
        freed = tracer.freed_bytes()  # outputs freed before the end of forward
        tracemalloc.reset_peak()
        loss.backward()
        bwd_peak = tracemalloc.get_traced_memory()[1]
    finally:
        dispatch.set_op_profiler(None)
        for h in handles:
            h.remove()
        if not was_tracing:
            tracemalloc.stop()
        _random.set_rng_state(rng_state)
    grad_bytes = float(sum(p.grad.array.nbytes for p in {id(q): q for q in model.parameters()}.values()
                           if p.grad is not None))
    del loss
    for p in model.parameters():
        p.grad = None
    # rescale per-op retention to the measured growth over the forward
    fwd_growth = float(max(0, end_fwd - start))
    for o, f in zip(tracer.ops, freed):
        o.retained = max(0.0, o.retained - f)
    pos = sum(o.retained for o in tracer.ops)
    for o in tracer.ops:
        o.retained = o.retained * (fwd_growth / pos) if pos > 0 else 0.0
    params, seen = [], set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        path = name.rsplit(".", 1)[0] if "." in name else ""
        params.append(ParamRecord(name, tuple(p.shape), tracer._layer(path), path, int(p.array.dtype.itemsize)))
    return StepTrace(ops=tracer.ops, params=params, n_layers=len(blocks), stack_path=stack_path,
                     forward_retained=fwd_growth, backward_extra=float(max(0, bwd_peak - end_fwd)),
                     grad_bytes=grad_bytes, batch=batch)


def _style_kind(style) -> str:
    n = type(style).__name__
    return "col" if n.startswith("Colwise") else "row" if n.startswith("Rowwise") else ""


def assign_tp_roles(trace: StepTrace, plan: dict | None) -> None:
    """Mark what a tensor-parallel ``plan`` ({module pattern: style}, as ``parallelize_module``
    takes) splits: ``linear`` ops in a Colwise module are ``"col"`` (output features split),
    in a Rowwise module ``"row"`` (input features split); ops fed by a col/split output are
    ``"split"`` until a row op consumes them (attention heads, the MLP's hidden units).
    Parameters of col modules are split on dim 0 (weight and bias), of row modules the
    weight on dim 1 (the bias stays whole)."""
    kinds = {}
    for pat, style in (plan or {}).items():
        k = _style_kind(style)
        if k:
            kinds[pat] = k

    def kind_of(path):
        for pat, k in kinds.items():
            if fnmatch.fnmatchcase(path, pat):
                return k
        return ""

    split_ids: set[int] = set()
    for o in trace.ops:
        k = kind_of(o.module) if o.name in ("linear", "embedding") else ""
        if k == "col":
            o.tp_role = "col"
            split_ids.update(o.out_ids)
        elif k == "row":
            o.tp_role = "row"
        elif any(s in split_ids for s in o.in_ids):
            o.tp_role = "split"
            split_ids.update(o.out_ids)
        else:
            o.tp_role = ""
    for p in trace.params:
        k = kind_of(p.module)
        p.tp_role = k if k == "col" else ("row" if k == "row" and len(p.shape) >= 2 else "")
