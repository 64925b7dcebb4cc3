"""From traces at small sizes to the trace at any size, without running the big model.

A model too big to build here (a 175B GPT) has the same op sequence as a small instance of
its own class; only the shapes differ, and every shape entry of a transformer or a CNN is a
monomial in the config's dimensions (``B*T``, ``3*C``, ``C/n_head``, ``H/2^k`` ...). So
:func:`trace_model` traces the model at base dimensions and once more with each dimension
doubled; for each shape entry the exponent of each dimension is ``log2(doubled / base)`` and
the coefficient follows, which gives the entry at any target exactly (checked in the tests
against a direct trace). The layer stack is traced with one block and replicated to the
target ``n_layer`` (blocks of a stack are identical). Memory figures are not shapes: they
are fitted per op, linear in the batch (``a + b*B``, exact for activations) and a power law
in each other dimension (exact when an op keeps one tensor, approximate when it keeps tensors
of different scaling: a blind spot listed in docs/PLANNER.md).

``build(dims) -> (model, inputs, step_loss, batch)`` makes the model and a batch at ``dims``
(a dict of positive ints, ``dims["batch"]`` samples). For a model that exists already, only
``"batch"`` varies (:func:`trace_live`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .opcost import op_cost
from .trace import StepTrace, trace_step

__all__ = ["ModelTrace", "trace_model", "trace_live"]


def _exponent(v0: float, v1: float) -> float:
    if v0 <= 0 or v1 <= 0:
        return 0.0
    e = math.log2(v1 / v0)
    r = round(e)
    return float(r) if abs(e - r) < 1e-6 else e


@dataclass
class _Entry:
    """A shape entry ``coef * prod(d ** e_d)``."""

    coef: float
    exps: dict

    def at(self, base: dict, target: dict) -> int:
        v = self.coef
        for d, e in self.exps.items():
            if e:
                v *= (target[d] / base[d]) ** e
        return max(1, int(round(v))) if self.coef > 0 else 0


@dataclass
class _Fit:
    """A memory figure ``c + k * basis``, ``basis`` a size that follows from the shapes
    (``opcost``: what the op keeps, what it moves), fitted on the batch-1 and batch-2 traces."""

    c: float
    k: float

    def at(self, basis: float) -> float:
        return max(0.0, self.c + self.k * basis)


def _fit_pair(v0: float, v1: float, s0: float, s1: float) -> _Fit:
    if s1 > s0:
        k = max(0.0, (v1 - v0) / (s1 - s0))
        return _Fit(v0 - k * s0, k)
    return _Fit(v0, 0.0)


def _shape_entries(t0: StepTrace, others: dict) -> tuple[list, list]:
    """Per op, per shape list, per entry: an _Entry; params likewise."""
    def entries(vals0, per_dim):
        out = []
        for j, v0 in enumerate(vals0):
            exps = {d: _exponent(v0, vals[j]) for d, vals in per_dim.items()}
            out.append(_Entry(float(v0), exps))
        return out

    ops = []
    for i, o in enumerate(t0.ops):
        ins = [entries(s, {d: t.ops[i].in_shapes[k] for d, t in others.items()})
               for k, s in enumerate(o.in_shapes)]
        outs = [entries(s, {d: t.ops[i].out_shapes[k] for d, t in others.items()})
                for k, s in enumerate(o.out_shapes)]
        ops.append((ins, outs))
    params = [entries(p.shape, {d: t.params[i].shape for d, t in others.items()})
              for i, p in enumerate(t0.params)]
    return ops, params


def _check_same(t0: StepTrace, t1: StepTrace, dim: str) -> None:
    n0, n1 = [o.name for o in t0.ops], [o.name for o in t1.ops]
    if n0 != n1 or len(t0.params) != len(t1.params):
        k = next((i for i, (a, b) in enumerate(zip(n0, n1)) if a != b), min(len(n0), len(n1)))
        raise ValueError(
            f"trace_model: doubling {dim!r} changed the op sequence (op {k}: "
            f"{n0[k] if k < len(n0) else 'end'} vs {n1[k] if k < len(n1) else 'end'}; "
            f"{len(n0)} vs {len(n1)} ops); the size dimensions must not change the model's "
            "control flow. Drop that dimension from `vary`, or trace at the target size")
    for i, (a, b) in enumerate(zip(t0.ops, t1.ops)):
        if len(a.in_shapes) != len(b.in_shapes) or len(a.out_shapes) != len(b.out_shapes):
            raise ValueError(f"trace_model: doubling {dim!r} changed op {i} ({a.name})'s arity")


class ModelTrace:
    """Traces at ``base`` dims and each varied dim doubled; :meth:`at` gives the StepTrace at
    any dims (module docstring)."""

    def __init__(self, base: dict, t0: StepTrace, others: dict, layer_dim: str | None):
        self.base, self.t0, self.layer_dim = dict(base), t0, layer_dim
        self.varied = sorted(others)
        self._op_entries, self._param_entries = _shape_entries(t0, others)
        if "batch" not in others:
            raise ValueError("trace_model: the batch dimension must be varied (memory is fitted "
                             "on the batch-1 and batch-2 traces)")
        t1 = others["batch"]
        c0 = [op_cost(o) for o in t0.ops]
        c1 = [op_cost(o) for o in t1.ops]
        self._retained = [_fit_pair(o.retained, t1.ops[i].retained, c0[i].retain, c1[i].retain)
                          for i, o in enumerate(t0.ops)]
        self._transient = [_fit_pair(o.transient, t1.ops[i].transient, c0[i].bytes, c1[i].bytes)
                           for i, o in enumerate(t0.ops)]
        # the backward's peak over the end of forward: a constant (gradients made before the
        # peak at the traced size, Python objects) and a part proportional to the largest
        # tensor an op keeps (the logits' gradient, attention's probabilities); the memory
        # model bounds the end of backward (all gradients alive) separately
        self._bwd = _fit_pair(t0.backward_extra, t1.backward_extra,
                              max((c.retain for c in c0), default=0.0),
                              max((c.retain for c in c1), default=0.0))

    def at(self, **dims) -> StepTrace:
        """The StepTrace at ``dims`` (missing dims keep their base value)."""
        unknown = set(dims) - set(self.base)
        if unknown:
            raise ValueError(f"ModelTrace.at: unknown dimension(s) {sorted(unknown)}; "
                             f"the trace's dimensions are {sorted(self.base)}")
        tgt = {**self.base, **dims}
        b, t0 = self.base, self.t0
        ops = []
        for i, o in enumerate(t0.ops):
            ins_e, outs_e = self._op_entries[i]
            r = replace(o, in_shapes=[tuple(e.at(b, tgt) for e in s) for s in ins_e],
                        out_shapes=[tuple(e.at(b, tgt) for e in s) for s in outs_e],
                        params=dict(o.params), kw=dict(o.kw))
            c = op_cost(r)
            r.retained = self._retained[i].at(c.retain)
            r.transient = self._transient[i].at(c.bytes)
            ops.append(r)
        params = [replace(p, shape=tuple(e.at(b, tgt) for e in self._param_entries[i]))
                  for i, p in enumerate(t0.params)]
        n_layers = t0.n_layers
        if self.layer_dim is not None and tgt[self.layer_dim] != b[self.layer_dim]:
            ops, params, n_layers = _replicate_layers(ops, params, t0, tgt[self.layer_dim])
        fwd = sum(o.retained for o in ops)
        grads = sum(math.prod(p.shape) * p.itemsize for p in params)
        biggest = max((op_cost(o).retain for o in ops), default=0.0)
        fixed = max(0.0, self._bwd.c)
        per_act = self._bwd.k
        return StepTrace(ops=ops, params=params, n_layers=n_layers, stack_path=t0.stack_path,
                         forward_retained=fwd, backward_extra=fixed + per_act * biggest,
                         grad_bytes=grads, batch=tgt.get("batch", t0.batch),
                         bwd_fixed=fixed, bwd_per_act=per_act)


def _rename(name: str, stack: str, i: int) -> str:
    pre = stack + ".0"
    return stack + f".{i}" + name[len(pre):] if name == pre or name.startswith(pre + ".") else name


def _replicate_layers(ops, params, t0: StepTrace, n: int):
    """The trace with layer 0's ops and parameters repeated ``n`` times (in place of the
    traced layers: the base must hold exactly one)."""
    if t0.n_layers != 1:
        raise ValueError(f"trace_model: the layer dimension must be 1 at the base trace "
                         f"(got a stack of {t0.n_layers})")
    first = next(i for i, o in enumerate(ops) if o.layer is not None)
    last = max(i for i, o in enumerate(ops) if o.layer is not None)
    block = ops[first:last + 1]
    new_ops = ops[:first]
    span = 1 + max((i for o in ops for i in (*o.in_ids, *o.out_ids)), default=0)
    for k in range(n):  # each copy's tensors are its own (serials shifted per copy)
        new_ops += [replace(o, layer=k, module=_rename(o.module, t0.stack_path, k),
                            params={j: _rename(v, t0.stack_path, k) for j, v in o.params.items()},
                            in_ids=[i + k * span for i in o.in_ids], out_ids=[i + k * span for i in o.out_ids])
                    for o in block]
    new_ops += ops[last + 1:]
    new_params, layer0 = [], [p for p in params if p.layer == 0]
    for p in params:
        if p.layer is None:
            new_params.append(p)
        elif p is layer0[0]:  # the stack's parameters, layer by layer, where layer 0's were
            new_params += [replace(q, layer=k, name=_rename(q.name, t0.stack_path, k),
                                   module=_rename(q.module, t0.stack_path, k))
                           for k in range(n) for q in layer0]
    return new_ops, new_params, n


def trace_model(build, dims: dict, vary=None, layer_dim: str | None = None) -> ModelTrace:
    """Trace ``build(dims)`` at ``dims`` and with each dim of ``vary`` (default: all but
    ``layer_dim``) doubled. ``layer_dim`` (e.g. ``"n_layer"``) must be 1 in ``dims``: the
    stack is replicated by :meth:`ModelTrace.at`."""
    base = dict(dims)
    if layer_dim is not None and base.get(layer_dim) != 1:
        raise ValueError(f"trace_model: trace with {layer_dim}=1 (got {base.get(layer_dim)}); "
                         "the stack is replicated to the target")
    vary = [d for d in (vary if vary is not None else base) if d != layer_dim]
    t0 = _run(build, base)
    others = {}
    for d in vary:
        t = _run(build, {**base, d: base[d] * 2})
        _check_same(t0, t, d)
        others[d] = t
    return ModelTrace(base, t0, others, layer_dim)


def _run(build, dims) -> StepTrace:
    model, inputs, step_loss, batch = build(dict(dims))
    return trace_step(model, inputs, step_loss, batch=batch)


def trace_live(model, make_inputs, step_loss) -> ModelTrace:
    """The trace of an existing ``model``: ``make_inputs(batch) -> tuple of tensors``; only
    the batch varies (traced at 1 and 2 samples)."""
    return trace_model(lambda d: (model, make_inputs(d["batch"]), step_loss, d["batch"]),
                       {"batch": 1}, vary=["batch"])

