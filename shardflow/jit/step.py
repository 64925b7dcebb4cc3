"""``shardflow.compile_step(model, optimizer, loss_fn)``: a whole training step (forward,
backward, optimizer update) compiled into one replay plan (``step_plan.py``).

Why an explicit API rather than ``compile(train_step_fn)``: a function that calls
``loss.backward()`` and ``optimizer.step()`` hides both from the op dispatcher (the only
place the tracer listens); capturing them would mean patching the engine and the optimizer.
Naming the model, the optimizer and the loss makes the parameter set, the update and the
semantics explicit. One call ``step(*batch)`` does what this eager code does::

    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model, *batch)          # a scalar Tensor
    loss.backward()
    optimizer.step()
    return loss.detach()

and leaves the same ``.grad`` (this step's gradients, a new Tensor each step; None for
parameters that got none).

Per call:

1. *Guards*: the key is the tensor arguments' (shape, dtype, device), the other arguments'
   values, every submodule's ``training`` flag and the parameters' (shape, dtype,
   requires_grad). A new key is compiled (up
   to ``cache_size_limit`` keys, then eager); a known key replays its plan.
2. *Compile* (first call of a key): the step runs eagerly once while ``trace.py`` records the
   forward graph (DCE, CSE and ``passes.fuse_for_training``: elementwise groups become
   ``FusedFunction`` calls with generated backward kernels); that eager step is this call's
   result (with DDP: see ``_compile``). Then the plan is *checked*: parameters and
   optimizer state are put back as they were, the plan replays the same step, and its loss,
   gradients and updated parameters are compared with eager's (float tolerance of the
   dtype); eager's outcome is restored either way. A mismatch, or anything the trace refuses
   (in-place ops, dropout in training mode, tensors made outside the dispatcher, an active
   autocast region), makes that key run
   eagerly, with the reason logged.
3. *Replay*: ``StepPlan.run``.

``SHARDFLOW_DEBUG=compile`` prints each compile (the forward graph, backward kinds, memory
plan counts, compile time) and each fallback reason; ``step.explain()`` returns the same.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from ..autograd import Tensor, _wrap, dispatch, is_grad_enabled
from ..nn.parallel import DistributedDataParallel
from ..nn.parallel.reducer import reducers_of
from . import overlap as _overlap
from . import passes
from .api import _log, closure_tensors
from .graph import Ref
from .step_plan import StepPlan
from .trace import TraceError, trace

__all__ = ["compile_step", "CompiledStep"]

cache_size_limit = 8


class _Entry:
    def __init__(self, plan=None, reason=None):
        self.plan, self.reason = plan, reason


class CompiledStep:
    """``step(*batch) -> loss``: a compiled training step (see the module docstring)."""

    def __init__(self, model, optimizer, loss_fn, fullgraph: bool = False,
                 overlap: bool | None = None):
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.fullgraph = fullgraph
        self.overlap = overlap  # None: automatic (overlap.policy)
        self.params = [p for grp in optimizer.param_groups for p in grp["params"]]
        # buffers an op updates in place (BatchNorm's running statistics): the compile-time
        # check puts them back too
        named = list(model.named_buffers()) if hasattr(model, "named_buffers") else []
        self.buffer_names = [n for n, _ in named]
        self.buffers = [b for _, b in named]
        self.submodules = list(model.modules()) if hasattr(model, "modules") else []
        # DDP wrappers in the model: their per-iteration duties become plan steps (_wire_ddp)
        self.ddps = [m for m in self.submodules if isinstance(m, DistributedDataParallel)]
        self.cache: dict = {}
        self.log: list[str] = []
        self.stats = {"traces": 0, "replays": 0, "eager": 0, "compile_s": 0.0}

    # ------------------------------------------------------------------ eager step
    def eager_step(self, *args):
        """The step this object compiles, run eagerly (the reference and the fallback)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model, *args)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def _eager(self, reason, args):
        if self.fullgraph:
            raise RuntimeError(f"shardflow.compile_step(fullgraph=True): cannot compile this "
                               f"step: {reason}")
        if not self.log or self.log[-1] != f"eager: {reason}":
            _log(self.log, f"eager: {reason}")
        self.stats["eager"] += 1
        return self.eager_step(*args)

    # ------------------------------------------------------------------ guards
    def _key(self, args):
        parts = []
        for a in args:
            if isinstance(a, Tensor):
                if a.requires_grad:
                    return None, "an input requires grad (compile_step differentiates " \
                                 "parameters only; run such steps eagerly)"
                parts.append(("T", tuple(a.shape), str(a.array.dtype), str(a.device)))
            else:
                try:
                    hash(a)
                except TypeError:
                    return None, "an argument is unhashable (guards need hashable non-tensor " \
                                 "arguments)"
                parts.append(("V", type(a).__name__, a))
        # every submodule's training flag (one may be switched alone: ``model.drop.eval()``)
        training = tuple(m.training for m in self.submodules)
        params = tuple((p.array.shape, p.array.dtype, p.requires_grad) for p in self.params)
        # a DDP wrapped after a compile retraces
        reducers = tuple(id(r) for r in self._all_reducers())
        return (tuple(parts), training, params, reducers), None

    def __call__(self, *args, **kwargs):
        if kwargs:
            return self._eager("keyword arguments are not compiled (pass them positionally)", args)
        if not is_grad_enabled():
            return self._eager("grad mode is off (a training step needs it)", args)
        if dispatch.op_counter_active():
            return self._eager("a FlopCounterMode is counting (it counts the ops as they run eagerly)", args)
        if any(d.join_active or d.reducer.touched for d in self.ddps):
            # join(): its shadow collectives follow eager forwards; an unfinished reduction:
            # eager's forward raises DDP's error naming the parameters
            return self._eager("DistributedDataParallel.join() is active or its last "
                               "backward is unfinished", args)
        key, why = self._key(args)
        if key is None:
            return self._eager(why, args)
        entry = self.cache.get(key)
        if entry is None:
            if len(self.cache) >= cache_size_limit:
                return self._eager(f"cache_size_limit ({cache_size_limit}) guard keys reached; "
                                   "new shapes run eagerly", args)
            entry, loss = self._compile(args)
            self.cache[key] = entry
            return loss  # the compile ran this call's step eagerly
        if entry.plan is None:
            return self._eager(entry.reason, args)
        self.stats["replays"] += 1
        return entry.plan.run(args)

    # ------------------------------------------------------------------ compile
    def _consts(self) -> dict:
        allowed: dict = {id(p): p for p in self.params}
        mods = [self.model] if hasattr(self.model, "parameters") else []
        for m in mods:
            for t in list(m.parameters()) + list(m.buffers()):
                allowed[id(t)] = t
        allowed.update(closure_tensors(self.loss_fn))
        return allowed

    def _refuse(self) -> str | None:
        if dispatch._hooks[2] is not None:
            return "an autocast region is active (its casts are not part of the graph)"
        known = {id(p) for p in self.params}
        if hasattr(self.model, "parameters") and any(
                p.requires_grad and id(p) not in known for p in self.model.parameters()):
            return "a model parameter that requires grad is not in the optimizer (eager would " \
                   "accumulate its .grad across steps; the plan only writes the optimizer's)"
        return None

    def _compile(self, args):
        """Trace, build the plan, check it against eager; returns (entry, this call's loss).

        Without DDP the traced eager step is this call's step. With DDP, tracing and the
        check run locally (``no_sync``, no buffer broadcast) from the same starting state,
        which is then put back, and this call's step runs once more with communication (the
        plan if it passed, else eager): every call makes exactly one step's collectives,
        whether it compiles, replays or runs eagerly, so ranks that disagree about compiling
        (a smaller last batch on one rank) still issue matching collectives."""
        t0 = time.perf_counter()
        self.stats["traces"] += 1
        shapes = ", ".join(str(tuple(a.shape)) for a in args if isinstance(a, Tensor))
        reason = self._refuse()
        if reason is not None:
            return self._refused(reason, shapes, t0), self.eager_step(*args)
        before = _snapshot(self.params, self.optimizer, self.buffers)
        reducers = self._all_reducers()
        with self._local(reducers):
            plan, loss, after, reason = self._trace_and_check(args, before, shapes)
        if reducers:
            _restore(before, self.params, self.optimizer, self.buffers)
            loss = plan.run(args) if reason is None else self.eager_step(*args)
        else:
            _restore(after, self.params, self.optimizer, self.buffers)  # eager's outcome
        self.stats["compile_s"] += time.perf_counter() - t0
        if reason is not None:
            return self._refused(reason, shapes, None), loss
        return _Entry(plan=plan), loss

    def _refused(self, reason, shapes, t0) -> _Entry:
        _log(self.log, f"eager for inputs {shapes}: {reason}")
        if self.fullgraph:
            raise RuntimeError(f"shardflow.compile_step(fullgraph=True): cannot compile: {reason}")
        if t0 is not None:
            self.stats["compile_s"] += time.perf_counter() - t0
        return _Entry(reason=reason)

    def _trace_and_check(self, args, before, shapes):
        """The traced eager step, then the plan replayed from ``before`` and compared.
        Returns (plan or None, eager loss, eager's end state, reason or None)."""
        t0 = time.perf_counter()
        g, reason = None, None
        self.optimizer.zero_grad(set_to_none=True)
        try:
            g, loss = trace(lambda *a: self.loss_fn(self.model, *a), args, self._consts())
        except TraceError as e:
            reason = str(e)
            loss = self.loss_fn(self.model, *args)
        else:
            if not (isinstance(g.outputs, Ref) and isinstance(loss, Tensor)
                    and loss.array.size == 1 and loss.requires_grad):
                reason = "loss_fn must return a scalar Tensor that requires grad"
        loss.backward()
        self.optimizer.step()
        loss = loss.detach()
        after = _snapshot(self.params, self.optimizer, self.buffers)
        if reason is None:
            reason = self._untraced_state_change(g, before, after)
        if reason is not None:
            return None, loss, after, reason
        n_calls = g.count("call")
        dead, merged, _ = passes.dce(g), passes.cse(g), passes.fuse_for_training(g, args)
        overlap_on, overlap_why = _overlap.policy(self.overlap)
        plan = StepPlan(g, self.params, self.optimizer, overlap=overlap_on)
        self._wire_ddp(plan)
        _restore(before, self.params, self.optimizer, self.buffers)
        try:
            replay = plan.run(args)
            bad = _compare_step(replay, loss, _snapshot(self.params, self.optimizer, self.buffers), after)
        except Exception as e:  # noqa: BLE001 - any failure of the plan means eager
            bad = f"the plan raised {type(e).__name__}: {e}"
        if bad:
            return None, loss, after, f"the compiled step differs from eager ({bad})"
        s = plan.stats
        opt = ("no optimizer (gradients left in .grad)" if isinstance(self.optimizer, _NoStep)
               else f"optimizer {type(self.optimizer).__name__}.step in place")
        reducers = self._all_reducers()
        ddp = (f"; DDP: {sum(len(r.buckets) for r in reducers)} gradient buckets "
               "all-reduced from the backward schedule" if reducers else "")
        _log(self.log, f"compiled step for inputs {shapes}: {n_calls} forward op calls, dce "
                       f"removed {dead}, cse merged {merged}; backward {s['fast_backward']} ops "
                       f"direct, {s['engine_backward']} via the engine on their sub-graph; "
                       f"{s['param_grads']} parameter gradients; "
                       f"memory plan drops {s['forward_drops']} forward values after their "
                       f"last reader; {opt}{ddp}; backward overlap {overlap_why}; "
                       f"{time.perf_counter() - t0:.2f} s\n{g}")
        if plan.tuner is not None:  # the check replay is not a trial (first-run costs)
            plan.tuner = _overlap.Tuner()
        for k in ("fast_backward", "engine_backward", "deferred_weight_grads"):  # replays only
            s[k] = 0
        plan.phase_s = dict.fromkeys(plan.phase_s, 0.0)
        return plan, loss, after, None

    # ------------------------------------------------------------------ DDP
    def _all_reducers(self) -> list:
        """The gradient reducers of the DDP wrappers inside the model, then any other reducer
        whose hook sits on one of the parameters (``compile_step(ddp.module, ...)``: eager
        runs its hooks but not DDP's forward, and so does the plan; compiling must still not
        communicate)."""
        found = [d.reducer for d in self.ddps]
        for p in self.params:
            for r in reducers_of(p):
                if all(r is not e for e in found):
                    found.append(r)
        return found

    @contextlib.contextmanager
    def _local(self, reducers):
        """While compiling: every reducer in ``no_sync`` and the model's DDP wrappers without
        their buffer broadcast, so tracing and the check make no collective call."""
        saved = [d.broadcast_buffers for d in self.ddps]
        with contextlib.ExitStack() as stack:
            for r in reducers:
                stack.enter_context(r.no_sync())
            for d in self.ddps:
                d.broadcast_buffers = False
            try:
                yield
            finally:
                for d, b in zip(self.ddps, saved):
                    d.broadcast_buffers = b

    def _wire_ddp(self, plan: StepPlan) -> None:
        """DDP's per-iteration duties as plan steps. Its bucket all-reduces need nothing
        here: they are the parameters' post-accumulate-grad hooks, which the plan runs when
        each gradient is final (``step_plan._set_grad``). Before the forward: DDP's check of
        an unfinished reduction and its buffer broadcast; after it: the parameters this graph
        never reaches are marked unused (``find_unused_parameters=True``)."""
        for d in self.ddps:
            plan.before_forward.append(d.pre_forward)
            if d.find_unused_parameters:
                plan.before_backward.append(d.reducer.mark_unused)

    def _untraced_state_change(self, g, before, after) -> str | None:
        """A buffer the step changed although no traced op received it: Python code in a
        module changed it (BatchNorm's ``num_batches_tracked += 1``), which a replay of the
        op graph would not repeat."""
        in_graph = {id(n.value) for n in g.nodes if n.kind == "const"}
        for name, b, x, y in zip(self.buffer_names, self.buffers, before["buffers"],
                                 after["buffers"]):
            if id(b) not in in_graph and not np.array_equal(x, y):
                return (f"buffer '{name}' was changed by Python code outside the traced ops "
                        "(e.g. BatchNorm's num_batches_tracked counter in training mode); the "
                        "plan would not repeat that change")
        return None

    def explain(self) -> str:
        """What was compiled and why steps ran eagerly (the compile log), and each plan's
        backward overlap choice so far."""
        tuned = [f"backward overlap for plan {k}: {e.plan.tuner.describe()}"
                 for k, e in enumerate(self.cache.values())
                 if e.plan is not None and e.plan.tuner is not None]
        return "\n".join(self.log + tuned)


# ---------------------------------------------------------------------- snapshots
def _snapshot(params, optimizer, buffers) -> dict:
    """Copies of the parameters, their ``.grad``, the optimizer state and the buffers."""
    state = {}
    for p in params:
        st = optimizer.state.get(p)
        if st:
            state[id(p)] = {k: (v.array.copy() if isinstance(v, Tensor) else v)
                            for k, v in st.items()}
    return {"params": [p.array.copy() for p in params],
            # a sparse .grad (Embedding(sparse=True)) is replaced, never written: kept as is
            "grads": [None if p.grad is None else p.grad if p.grad.is_sparse else p.grad.array.copy()
                      for p in params],
            "state": state, "buffers": [b.array.copy() for b in buffers]}


def _restore(snap: dict, params, optimizer, buffers) -> None:
    for b, a in zip(buffers, snap["buffers"]):
        np.copyto(b.array, a)
    for p, a, gr in zip(params, snap["params"], snap["grads"]):
        np.copyto(p.array, a)
        p.grad = None if gr is None else gr if isinstance(gr, Tensor) else _wrap(gr.copy())
        st = snap["state"].get(id(p))
        if st is None:
            optimizer.state.pop(p, None)
        else:
            optimizer.state[p] = {k: (_wrap(v.copy()) if isinstance(v, np.ndarray) else v)
                                  for k, v in st.items()}


def _close(x, y) -> bool:
    if x.shape != y.shape:
        return False
    tol = 1e-4 if x.dtype.itemsize <= 4 else 1e-9
    return bool(np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True))


def _compare_step(loss, ref_loss, got: dict, ref: dict) -> str | None:
    if not _close(np.asarray(loss.array), np.asarray(ref_loss.array)):
        return f"loss {float(loss):.6g} vs eager {float(ref_loss):.6g}"
    for k, (a, b) in enumerate(zip(got["grads"], ref["grads"])):
        if (a is None) != (b is None) or (a is not None and not _close(a, b)):
            return f"the gradient of parameter {k}"
    for k, (a, b) in enumerate(zip(got["params"], ref["params"])):
        if not _close(a, b):
            return f"parameter {k} after the optimizer step"
    for k, (a, b) in enumerate(zip(got["buffers"], ref["buffers"])):
        if not _close(a, b):
            return f"buffer {k} after the step"
    return None


def compile_step(model, optimizer, loss_fn, *, fullgraph: bool = False,
                 overlap: bool | None = None) -> CompiledStep:
    """Compile one training step: ``loss_fn(model, *batch)`` forward, backward,
    ``optimizer.step()``; returns a ``CompiledStep`` (call it with the batch; it returns the
    loss). ``optimizer=None`` compiles forward and backward only: the call leaves this step's
    gradients in ``.grad`` for the caller to clip and step. ``fullgraph=True`` raises instead
    of running a step eagerly. ``overlap``: run the linear layers' weight-gradient GEMMs on a
    second thread during the backward (``jit/overlap.py``); None (default): with exactly 2 CPUs
    (and threadpoolctl) each plan times its first replays with and without and keeps the
    faster, else off."""
    if not callable(loss_fn):
        raise TypeError(f"compile_step: loss_fn must be callable as loss_fn(model, *batch), got "
                        f"{type(loss_fn).__name__}")
    if optimizer is None:
        if not hasattr(model, "parameters"):
            raise TypeError("compile_step(model, None, loss_fn): without an optimizer the "
                            "parameters come from model.parameters(); pass an nn.Module")
        optimizer = _NoStep([p for p in model.parameters() if p.requires_grad])
    elif not hasattr(optimizer, "param_groups") or not hasattr(optimizer, "step"):
        raise TypeError(f"compile_step: expected a shardflow.optim optimizer (or None for "
                        f"forward and backward only), got {type(optimizer).__name__}")
    if overlap not in (None, True, False):
        raise TypeError(f"compile_step: overlap must be None (automatic), True or False, got "
                        f"{overlap!r}")
    return CompiledStep(model, optimizer, loss_fn, fullgraph=fullgraph, overlap=overlap)


class _NoStep:
    """``compile_step(model, None, loss_fn)``: the optimizer slot of a forward-and-backward
    step. Its ``step`` does nothing, so the caller clips, checks and steps the gradients it
    leaves in ``.grad`` (``shardflow train --compile`` does)."""

    def __init__(self, params):
        self.param_groups = [{"params": list(dict.fromkeys(params))}]
        self.state: dict = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.param_groups[0]["params"]:
            p.grad = None

    def step(self) -> None:
        return None
