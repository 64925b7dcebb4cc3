"""The replay plan of a compiled training step: forward, backward and optimizer as one flat
schedule over a traced forward ``Graph``, without the autograd tape across ops.

Built once per guard key (``StepPlan(graph, params, optimizer)``) from the forward graph that
``trace.py`` recorded (after DCE and CSE); ``run(args)`` is one training step.

**Forward.** The live ``call`` nodes in order. A value that needs a gradient (a parameter, or
the result of an op on one) enters each op as a *fresh leaf*: a new Tensor around the same
array with ``requires_grad=True`` and no history. So the op's ``Function`` (the object that
holds what its backward reads, the same one eager autograd makes) is created, but it links
only to those leaves: no tape across ops, nothing for the engine to walk. A value no
gradient flows through enters as it is, so ``needs_input_grad`` is what eager sees (e.g. no
input gradient for the first layer).

**Backward.** The same nodes in reverse order (a topological order of the forward) call the
same backward code autograd would:

* one output whose ``Function`` links only to this call's leaves (almost every op):
  ``fn.backward(g)`` directly, each returned gradient routed to the value its leaf stands for
  (shape fix-ups as the engine's ``_fit_gradient``);
* anything else (tuple results, ops made of several Functions, an op returning its input):
  the engine on that op's small sub-graph only, capturing the leaves' gradients.

Gradients of one value from several readers are summed in its slot, as the engine's slots do.

**Parameters and the optimizer.** A parameter's gradient is complete once its first forward
reader has run its backward; there it becomes ``.grad`` (without the engine's copy when the
array is the backward's own and no other ``.grad`` holds it, see ``_set_grad``).
Every ``.grad`` is set to None as the step begins (``optimizer.zero_grad(set_to_none=True)``),
so parameters that get no gradient keep None and hooks see eager's state. The
optimizer update is the last node: ``optimizer.step()``, in place on the parameter and state
buffers (the fused Numba Adam/AdamW/SGD kernels when they apply, ``kernels/optim.py``).

**Memory plan.** Liveness from the schedule: a forward value is dropped right after its last
forward reader ran (what a backward needs is held by that op's Function); a gradient slot is
dropped once its op consumed it, and each Function is released right after its backward (as
the engine's ``retain_graph=False``). NumPy's allocator reuses the freed blocks for the next
ops; ``stats`` counts what the plan frees early.
"""

from __future__ import annotations

import time

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd import engine as _engine
from . import overlap as _overlap
from .graph import Graph, Ref, map_refs
from .overlap import Later, resolve


class StepPlan:
    """One guard key's compiled step: ``run(args) -> loss`` (a Tensor without history)."""

    def __init__(self, g: Graph, params: list[Tensor], optimizer, overlap: bool | str = False):
        self.g, self.optimizer, self.params = g, optimizer, params
        # weight-gradient GEMMs on the worker thread in backward (``overlap.py``): False,
        # True, or "tune" (``tuner`` times both and keeps the faster)
        self.overlap = overlap
        self.tuner = _overlap.Tuner() if overlap == "tune" else None
        self.calls = [i for i, n in enumerate(g.nodes) if n.kind == "call"]
        out_refs: list[Ref] = []
        map_refs(g.outputs, out_refs.append)
        keep = {r.node for r in out_refs}
        # forward liveness: drop a value after its last forward reader
        last: dict[int, int] = {}
        for i in self.calls:
            for r in g.nodes[i].refs():
                last[r.node] = i
        self.drops: dict[int, list[int]] = {}
        for v, i in last.items():
            if v not in keep and g.nodes[v].kind == "call":
                self.drops.setdefault(i, []).append(v)
        # parameter gradients are final after the backward of their first forward reader
        by_id = {id(p): p for p in params}
        first: dict[int, int] = {}
        for i in self.calls:
            for r in g.nodes[i].refs():
                n = g.nodes[r.node]
                if n.kind == "const" and id(n.value) in by_id and n.value.requires_grad:
                    first.setdefault(r.node, i)
        self.deliver: dict[int, list[int]] = {}
        for v, i in first.items():
            self.deliver.setdefault(i, []).append(v)
        reached = {id(g.nodes[v].value) for v in first}
        self.unreached = [p for p in params if id(p) not in reached]
        self.stats = {"ops": len(self.calls), "fast_backward": 0, "engine_backward": 0,
                      "deferred_weight_grads": 0,
                      "forward_drops": sum(len(v) for v in self.drops.values()),
                      "param_grads": len(first)}
        # wall seconds spent in each phase over all runs (``bench.py`` reports them per step)
        self.phase_s = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
        # callables run once per step: before the forward (DDP's checks and buffer broadcast)
        # and after it, once the parameters that get no gradient are known (DDP's
        # find_unused_parameters marking); set by ``step.py``
        self.before_forward: list = []
        self.before_backward: list = []

    # ------------------------------------------------------------------ replay
    def run(self, args: tuple):
        g = self.g
        nodes = g.nodes
        env: list = [None] * len(nodes)
        for i, n in enumerate(nodes):
            if n.kind == "input":
                env[i] = args[n.index]
            elif n.kind == "const":
                env[i] = n.value

        def get(r: Ref):
            v = env[r.node]
            return v if r.item is None else v[r.item]

        t0 = time.perf_counter()
        for p in self.params:  # zero_grad(set_to_none=True), as the eager step begins
            p.grad = None
        for f in self.before_forward:
            f()
        tape: dict[int, tuple] = {}  # node -> what its backward needs (``_tape_entry``)
        for i in self.calls:
            n = nodes[i]
            leaves: dict[int, tuple] = {}

            def leaf(r: Ref, leaves=leaves):
                t = get(r)
                if not (isinstance(t, Tensor) and t.requires_grad):
                    return t
                lt = _wrap(t.array, True)
                leaves[id(lt)] = (r, lt)
                return lt

            out = n.target(*map_refs(n.args, leaf), **map_refs(n.kwargs, leaf))
            env[i] = out
            if leaves:
                tape[i] = _tape_entry(out, leaves)
            for v in self.drops.get(i, ()):
                env[v] = None
        loss = map_refs(g.outputs, get)
        t1 = time.perf_counter()
        tuner = self.tuner
        defer = (tuner.mode() if tuner is not None else self.overlap is True) and \
            not any(p._hooks or p._post_hooks for p in self.params)
        if defer:
            with _overlap.blas_single_thread():
                self._backward(loss, tape, env, defer=True)
        else:
            self._backward(loss, tape, env, defer=False)
        t2 = time.perf_counter()
        self.optimizer.step()
        t3 = time.perf_counter()
        ph = self.phase_s
        ph["forward"] += t1 - t0
        ph["backward"] += t2 - t1
        ph["optimizer"] += t3 - t2
        if tuner is not None and defer == tuner.mode():
            tuner.record(defer, t3 - t0)  # (a step with hooks runs serially: not a trial)
        return loss.detach()

    def _backward(self, loss: Tensor, tape: dict, env: list, defer: bool) -> None:
        """The reverse schedule. With ``defer``, each ``Linear``'s weight-gradient GEMM runs
        on the worker thread (a ``Later`` in its slot); a parameter whose gradient is still
        being computed waits in ``pending`` and is delivered, in order, as soon as it is done
        (checked after every node) or at the end, which waits for all of them, so no GEMM
        is left running when BLAS's threads are restored."""
        nodes = self.g.nodes
        grads: dict = {self.g.outputs: np.ones_like(loss.array)}  # Ref -> gradient array
        handed: set[int] = set()  # ids of the arrays given to a .grad this step
        pending: list = []  # (parameter, Later) in delivery order
        for f in self.before_backward:
            f(self.unreached)
        try:
            for i in reversed(self.calls):
                entry = tape.pop(i, None)
                if entry is not None:
                    n_out = entry[1]
                    gouts = [resolve(grads.pop(Ref(i), None))] if n_out is None else \
                        [resolve(grads.pop(Ref(i, k), None)) for k in range(n_out)]
                    if any(x is not None for x in gouts):
                        if entry[0] == "fn":
                            self._function_backward(entry, gouts, grads, defer)
                        elif entry[0] == "same":
                            self.stats["fast_backward"] += 1
                            prev = grads.get(entry[2])
                            grads[entry[2]] = gouts[0] if prev is None else resolve(prev) + resolve(gouts[0])
                        else:
                            self._engine_backward(entry, gouts, grads)
                for v in self.deliver.get(i, ()):
                    g = grads.pop(Ref(v), None)
                    if type(g) is Later or pending:
                        pending.append((nodes[v].value, g))
                    else:
                        _set_grad(nodes[v].value, g, handed)
                while pending and not (type(pending[0][1]) is Later and not pending[0][1].done()):
                    p, g = pending.pop(0)
                    _set_grad(p, resolve(g), handed)
        finally:
            # no deferred GEMM may outlive the backward (BLAS's threads are restored next),
            # also when a backward raised
            for g in [g for _, g in pending] + list(grads.values()):
                if type(g) is Later:
                    g.future.exception()
        for p, g in pending:
            _set_grad(p, resolve(g), handed)

    def _function_backward(self, entry, gouts: list, grads: dict, defer: bool = False) -> None:
        """The op's one Function's ``backward``; its gradients routed to the leaves' values.
        With ``defer``, the weight gradient of a Function that offers
        ``backward_weight_later`` (``Linear``) is a ``Later`` (``overlap.py``)."""
        _, n_out, fn, nrs, leaves = entry
        self.stats["fast_backward"] += 1
        if fn._out_meta is None:
            slot = gouts
        else:  # a multi-output Function: gradients by output number, as the engine's slot
            slot = [None] * len(fn._out_meta)
            for nr, x in zip(nrs, gouts):
                slot[nr] = x
        later = None
        split = getattr(fn, "backward_weight_later", None) if defer else None
        if split is not None and fn._out_meta is None and slot[0] is not None:
            if fn._saved_versions:
                _engine._check_versions(fn)
            in_grads, later = split(slot[0])
        else:
            in_grads = _engine._call_backward(fn, slot)
        fn.release()
        if later is not None:
            self.stats["deferred_weight_grads"] += 1
            in_grads = (in_grads[0], Later(later)) + tuple(in_grads[2:])
        if in_grads is None:
            return
        for k, edge in enumerate(fn.next):
            if edge is None or in_grads[k] is None:
                continue
            ref, shape = leaves[id(edge[0])]
            gk = in_grads[k]
            if type(gk) is not Later and gk.shape != shape:
                gk = _engine._fit_gradient(fn, k, gk, shape)
            prev = grads.get(ref)
            grads[ref] = gk if prev is None else resolve(prev) + resolve(gk)

    def _engine_backward(self, entry, gouts: list, grads: dict) -> None:
        """The engine on this op's own sub-graph (its Functions down to its leaves)."""
        _, n_out, outs, leaves = entry
        pairs = [(o, x) for o, x in zip(outs, gouts) if x is not None]
        if len({id(o.grad_fn) for o, _ in pairs}) != len(pairs):
            # the engine counts a Function's edges once per root naming it, so seeding two
            # outputs of one Function would never complete its inputs' gradients
            raise RuntimeError("an op's outputs share a Function reached through other "
                               "Functions; this op's backward is not compiled")
        self.stats["engine_backward"] += 1
        capture = {lt: None for _, lt in leaves.values()}
        _engine.run_backward([o for o, _ in pairs], [x for _, x in pairs], False, capture)
        for ref, lt in leaves.values():
            gk = capture[lt]
            if gk is not None:
                prev = grads.get(ref)
                grads[ref] = gk if prev is None else resolve(prev) + gk


def _tape_entry(out, leaves: dict) -> tuple:
    """What the backward of one op call needs, and nothing more (the memory plan).

    ``("fn", n_out, fn, output numbers, {id(leaf): (Ref, shape)})`` when the op made one
    Function whose inputs are this call's leaves: the leaves' arrays are let go (the Function
    holds what its backward reads) and the outputs are not kept. Otherwise
    ``("engine", n_out, outputs, {id(leaf): (Ref, leaf)})``; ``("same", None, Ref)`` when the
    op returned one of its inputs itself. ``n_out``: None for a single Tensor result, else
    the tuple's length."""
    outs = [out] if isinstance(out, Tensor) else list(out)
    n_out = None if isinstance(out, Tensor) else len(outs)
    if n_out is None and id(out) in leaves:
        # the op returned its input itself (``contiguous()`` of a contiguous tensor): its
        # gradient is the output's, routed to that input; no Function to run
        return ("same", None, leaves[id(out)][0])
    fn = outs[0].grad_fn if isinstance(outs[0], Tensor) else None
    if fn is not None and not fn._pre_hooks and all(
            isinstance(o, Tensor) and o.grad_fn is fn for o in outs) and \
            (fn._out_meta is not None or len(outs) == 1) and \
            all(e is None or id(e[0]) in leaves for e in fn.next):
        small = {}
        for k, (ref, lt) in leaves.items():
            small[k] = (ref, lt.array.shape)
            lt.array = None  # only its identity is needed: fn.next routes by it
        return ("fn", n_out, fn, [o._output_nr for o in outs], small)
    return ("engine", n_out, outs, leaves)


def _set_grad(p: Tensor, g, handed: set) -> None:
    """``p.grad = g`` as the engine's leaf accumulation after ``zero_grad(set_to_none=True)``
    (a new Tensor each step), with the parameter's hooks at the engine's moments: tensor
    hooks (``register_hook``) on the gradient before it is set, post-accumulate-grad hooks
    (``register_post_accumulate_grad_hook``; DDP's bucket hook) right after. So DDP's bucket
    all-reduces start inside the backward schedule, as soon as a bucket's last gradient is
    final -- the moment eager's engine would start them.

    The engine copies each leaf gradient (one backward may hand one array to several
    inputs). Here the copy is skipped when it cannot matter: ``g`` owns its memory (not a
    view), has the parameter's shape and dtype, and no other ``.grad`` got it this step; the
    plan never writes a gradient array in place, so nothing else can change it."""
    if g is None:
        p.grad = None
        return
    if p._hooks:
        g = _engine.run_tensor_hooks(p, g).copy()  # a hook may keep what it was given
    a = p.array
    if not (type(g) is np.ndarray and g.base is None and g.dtype == a.dtype and
            g.shape == a.shape and g.flags.c_contiguous and g.flags.writeable and
            id(g) not in handed):
        g = g.astype(a.dtype) if g.dtype != a.dtype else g.copy()
    handed.add(id(g))
    p.grad = _wrap(g)
    if p._post_hooks:
        for hook in p._post_hooks:
            hook(p)
