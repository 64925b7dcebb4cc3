"""Tracing: run the function once, eagerly, and record every op call into a ``Graph``.

How: the op dispatcher's hook slot (``autograd.dispatch.set_op_profiler``, the one every
registered op call passes through) is taken for the duration of the trace. The hook records
the *outermost* op call only (an op that calls other registered ops internally, such as
``linear`` or ``layer_norm``, is one node) and then runs it, so the trace's results are the
eager results. A tensor argument that is neither a traced input nor a node's result must be a
known constant (``allowed_consts``: the module's parameters and buffers, tensors of the
function's closure); any other tensor was made outside the dispatcher (a Tensor method that
is not a registered op, ``shardflow.tensor(...)`` inside the function) and the trace fails
with ``TraceError``, which ``compile`` turns into an eager fallback with that reason.

Also refused (the graph would not replay them faithfully): in-place ops (names ending in
``_``, or ``out=``), random ops (dropout with p > 0 in training mode, ``rand*``), and an
active profiler (its hook shares the slot). The hook is process-wide: ops that other Python
threads run during a trace would be recorded too, so trace from one thread at a time.
"""

from __future__ import annotations

from ..autograd import Tensor, dispatch
from ..comm import profiling as _profiling
from .graph import Graph, Node, Ref

_RANDOM = ("dropout", "rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
           "normal", "bernoulli", "multinomial", "alpha_dropout", "feature_alpha_dropout",
           "dropout1d", "dropout2d", "dropout3d", "randperm")


_depth = [0]  # traces running now (compile may trace inside a trace: a compiled function's call)


def tracing() -> bool:
    """Whether a ``compile`` trace is recording now (``torch.compiler.is_compiling``)."""
    return _depth[0] > 0


class TraceError(Exception):
    """The function cannot be traced faithfully; the message says why."""


class _Tracer:
    def __init__(self, graph: Graph, values: dict, allowed_consts: dict):
        self.g, self.values, self.allowed = graph, values, allowed_consts
        self.depth = 0
        self.consts: dict[int, Ref] = {}
        self.alive: list = []  # ids are unique only while objects live: keep traced values

    def ref_of(self, t: Tensor, op: str) -> Ref:
        r = self.values.get(id(t))
        if r is not None:
            return r
        if id(t) in self.allowed:
            r = self.consts.get(id(t))
            if r is None:
                r = self.consts[id(t)] = self.g.add(Node("const", value=t))
                self.values[id(t)] = r
                self.g.meta[r.node] = (tuple(t.shape), t.array.dtype)
            return r
        raise TraceError(
            f"op '{op}' got a tensor of shape {tuple(t.shape)} that is not an input, a parameter, "
            "a buffer or a tensor of the function's closure, nor the result of a traced op: it was "
            "made outside the op dispatcher (e.g. shardflow.tensor(...) or a Tensor method that is "
            "not a registered op) and the graph cannot replay it"
        )

    def hook(self, name, func, args, kwargs):
        if self.depth:
            return func(*args, **kwargs)
        if name.endswith("_") or kwargs.get("out") is not None or kwargs.get("inplace"):
            raise TraceError(f"in-place op '{name}' is not compiled (the graph replays pure ops only)")
        if name in ("embedding", "embedding_bag") and _sparse_arg(name, args, kwargs):
            raise TraceError(f"'{name}' with sparse=True is not compiled (its sparse weight gradient "
                             "is delivered by the eager engine)")
        if name in _RANDOM:
            p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
            training = kwargs.get("training", args[2] if len(args) > 2 else True)
            if not (name.endswith("dropout") and (not training or p == 0)):
                raise TraceError(f"random op '{name}' is not compiled (call model.eval() for dropout)")
        targs = _tensors_to_refs(args, self, name)
        tkw = _tensors_to_refs(kwargs, self, name)
        self.depth += 1
        try:
            out = func(*args, **kwargs)
        finally:
            self.depth -= 1
        ref = self.g.add(Node("call", name=name, target=func, args=targs, kwargs=tkw))
        if isinstance(out, Tensor):
            self.values[id(out)] = ref
            self.g.meta[ref.node] = (tuple(out.shape), out.array.dtype)
            self._keep(out)
        elif isinstance(out, tuple) and all(isinstance(o, Tensor) for o in out):
            for k, o in enumerate(out):
                self.values[id(o)] = Ref(ref.node, k)
                self._keep(o)
        else:
            self._keep(out)
        return out

    def _keep(self, obj):
        self.alive.append(obj)


def _tensors_to_refs(obj, tracer, op):
    if isinstance(obj, Tensor):
        return tracer.ref_of(obj, op)
    if isinstance(obj, tuple):
        return tuple(_tensors_to_refs(o, tracer, op) for o in obj)
    if isinstance(obj, list):
        return [_tensors_to_refs(o, tracer, op) for o in obj]
    if isinstance(obj, dict):
        return {k: _tensors_to_refs(v, tracer, op) for k, v in obj.items()}
    return obj


def trace(fn, args: tuple, allowed_consts: dict):
    """(graph, eager result) for ``fn(*args)``; tensor args become ``input`` nodes."""
    if _profiling.current is not None:
        raise TraceError("a shardflow.profiler profile is recording (it shares the op hook)")
    g = Graph()
    values: dict[int, Ref] = {}
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            values[id(a)] = g.add(Node("input", index=i))
            g.meta[len(g.nodes) - 1] = (tuple(a.shape), a.array.dtype)
    tracer = _Tracer(g, values, allowed_consts)
    dispatch.set_op_profiler(tracer.hook)
    _depth[0] += 1
    try:
        result = fn(*args)
    finally:
        _depth[0] -= 1
        dispatch.set_op_profiler(None)
    g.outputs = _outputs_to_refs(result, values)
    return g, result


def _outputs_to_refs(obj, values):
    if isinstance(obj, Tensor):
        r = values.get(id(obj))
        if r is None:
            raise TraceError("the function returned a tensor no traced op made (an input returned "
                             "unchanged through a non-op, or a constant)")
        return r
    if isinstance(obj, (tuple, list)):
        return type(obj)(_outputs_to_refs(o, values) for o in obj)
    if isinstance(obj, dict):
        return {k: _outputs_to_refs(v, values) for k, v in obj.items()}
    raise TraceError(f"the function returned a {type(obj).__name__}; compile handles tensors and "
                     "tuples / lists / dicts of tensors")


def _sparse_arg(name, args, kwargs) -> bool:
    """``sparse`` of an ``embedding`` / ``embedding_bag`` call (positional 7th / 8th)."""
    pos = 6 if name == "embedding" else 7
    return bool(kwargs.get("sparse", args[pos] if len(args) > pos else False))
