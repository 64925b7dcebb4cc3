"""``shardflow.compile(model_or_fn)``: trace, optimise and replay forward graphs, with eager
fallback.

The spelling of ``torch.compile``: ``shardflow`` is the torch-like namespace, so a PyTorch
program calling ``torch.compile(model)`` runs with ``import shardflow as torch``. ``backend``,
``mode``, ``dynamic`` and ``options`` are accepted and ignored (there is one backend);
``fullgraph=True`` raises instead of falling back; ``disable=True`` returns the input.

Per call:

1. *Inference or autograd*: with grad mode off (``no_grad`` / ``inference_mode``), or nothing
   requiring grad, the graph replays without the autograd tape; fused groups run as
   ``fused`` nodes on raw arrays. When autograd is needed (a training forward), the graph
   replays with autograd recording each replayed op, so ``loss.backward()`` works as in
   eager; each fused group is then one autograd ``FusedFunction`` (``fused_function.py``:
   generated forward and backward kernels), so the backward of a group is one pass too.
   Backward and the optimizer step are otherwise not compiled (``compile_step`` does that).
2. *Guards*: the key is the tensor arguments' (shape, dtype, device, requires_grad), the
   other arguments' values, the module's ``training`` flag, the grad mode and (1). A key
   seen before replays its graph; a new key traces again (up to ``cache_size_limit`` = 8
   keys, then eager).
3. *Trace* (``trace.py``) the eager call into a ``Graph`` (``graph.py``), then the passes
   (``passes.py``): dead-code elimination, common subexpressions, linear's bias split off to
   fuse with the activation after it, elementwise fusion into generated Numba kernels
   (``codegen.py``; NumPy arrays only, and only when the kernels are on,
   ``SHARDFLOW_KERNELS``).
4. *Check*: the new graph is replayed once on the tracing inputs and compared with the eager
   result (float tolerance of the dtype); a mismatch, or anything the trace refuses, makes
   that key run eagerly, with the reason logged.

``SHARDFLOW_DEBUG=compile`` prints to stderr each trace (the graph, what was fused, the pass
counts) and each fallback reason; ``compiled.explain()`` returns the same text whenever asked.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .. import _config
from ..autograd import Tensor, dispatch, is_grad_enabled, no_grad
from ..nn import Module
from . import compile_options as _options
from . import executor, passes
from .trace import TraceError, trace

__all__ = ["compile", "CompiledFunction", "OptimizedModule"]

cache_size_limit = 8


def _log(lines: list[str], msg: str) -> None:
    lines.append(msg)
    if _config.debug_compile():
        print(f"[shardflow.compile] {msg}", file=sys.stderr, flush=True)


class _Entry:
    """One guard key's compiled graph, or the reason it runs eagerly."""

    def __init__(self, graph=None, reason=None, autograd=False):
        self.graph, self.reason, self.autograd = graph, reason, autograd


class CompiledFunction:
    """A callable that replays traced graphs of ``fn`` (see the module docstring)."""

    def __init__(self, fn, module: Module | None = None, fullgraph: bool = False):
        self.fn, self.module, self.fullgraph = fn, module, fullgraph
        self.cache: dict = {}
        self.log: list[str] = []
        self.stats = {"traces": 0, "replays": 0, "eager": 0, "compile_s": 0.0}

    # ------------------------------------------------------------------ guards
    def _key(self, args):
        parts = []
        for a in args:
            if isinstance(a, Tensor):
                parts.append(("T", tuple(a.shape), str(a.array.dtype), str(a.device),
                              a.requires_grad))
            else:
                try:
                    hash(a)
                    parts.append(("V", type(a).__name__, a))
                except TypeError:
                    return None
        training = self.module.training if self.module is not None else None
        return (tuple(parts), training, is_grad_enabled(), self._needs_autograd(args))

    def _needs_autograd(self, args) -> bool:
        if not is_grad_enabled():
            return False
        if any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return True
        return self.module is not None and any(p.requires_grad for p in self.module.parameters())

    def _eager(self, reason, args, kwargs):
        if self.fullgraph:
            raise RuntimeError(f"shardflow.compile(fullgraph=True): cannot compile this call: {reason}")
        self.stats["eager"] += 1
        return self.fn(*args, **kwargs)

    # ------------------------------------------------------------------ call
    def __call__(self, *args, **kwargs):
        if kwargs:
            return self._eager_logged("keyword arguments are not compiled (pass them "
                                      "positionally)", args, kwargs)
        if any(isinstance(a, Tensor) and a.device.type != "cpu" for a in args):
            return self._eager_logged("a tensor is on a GPU (the compiler generates NumPy code: "
                                      "GPU calls run eagerly, on CuPy)", args, kwargs)
        if dispatch.op_counter_active():
            return self._eager_logged("a FlopCounterMode is counting (it counts the ops as they "
                                      "run eagerly)", args, kwargs)
        key = self._key(args)
        if key is None:
            return self._eager_logged("an argument is unhashable (guards need hashable "
                                      "non-tensor arguments)", args, kwargs)
        entry = self.cache.get(key)
        if entry is None:
            if len(self.cache) >= cache_size_limit:
                return self._eager_logged(f"cache_size_limit ({cache_size_limit}) guard keys "
                                          "reached; new shapes run eagerly", args, kwargs)
            entry, result = self._compile(key, args)
            self.cache[key] = entry
            if result is not None:  # the trace's eager result serves this first call
                return result
        if entry.graph is None:
            return self._eager(entry.reason, args, kwargs)
        self.stats["replays"] += 1
        if entry.autograd:  # the replayed ops record the tape: backward works as in eager
            return executor.run(entry.graph, args)
        with no_grad():
            return executor.run(entry.graph, args)

    def _eager_logged(self, reason, args, kwargs):
        if not self.log or self.log[-1] != f"eager: {reason}":
            _log(self.log, f"eager: {reason}")
        return self._eager(reason, args, kwargs)

    def _consts(self) -> dict:
        allowed: dict = {}
        if self.module is not None:
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                allowed[id(t)] = t
        allowed.update(closure_tensors(self.fn))
        return allowed

    def _compile(self, key, args):
        t0 = time.perf_counter()
        self.stats["traces"] += 1
        shapes = ", ".join(str(p[1]) for p in key[0] if p[0] == "T")
        autograd = key[-1]
        try:
            if autograd:  # the trace run is the eager call: its result carries the tape
                g, result = trace(self.fn, args, self._consts())
            else:
                with no_grad():
                    g, result = trace(self.fn, args, self._consts())
        except TraceError as e:
            _log(self.log, f"eager for inputs {shapes}: {e}")
            if self.fullgraph:
                raise RuntimeError(f"shardflow.compile(fullgraph=True): cannot compile: {e}") from None
            return _Entry(reason=str(e)), None
        n_calls = g.count("call")
        dead = passes.dce(g)
        merged = passes.cse(g)
        fused, split = [], 0
        if autograd:  # groups become FusedFunctions: generated forward and backward kernels
            split, fused = passes.fuse_for_training(g, args)
        elif passes.can_fuse(g, args):
            split = passes.split_linear_bias(g)
            fused = passes.fuse_elementwise(g)
        with no_grad():
            replay = executor.run(g, args)
        bad = _compare(replay, result)
        dt = time.perf_counter() - t0
        self.stats["compile_s"] += dt
        if bad:
            _log(self.log, f"eager for inputs {shapes}: the replayed graph differs from eager ({bad})")
            return _Entry(reason=bad), result
        groups = passes.group_names(g, fused)
        mode = "with autograd" if autograd else "inference"
        _log(self.log, f"traced inputs {shapes} [{mode}]: {n_calls} op calls, dce removed {dead}, "
                       f"cse merged {merged}, linear bias split {split}, fused {len(fused)} "
                       f"group(s) [{groups}], {dt:.2f} s\n{g}")
        return _Entry(graph=g, autograd=autograd), result

    def explain(self) -> str:
        """What was traced, fused, and why calls ran eagerly (the compile log)."""
        return "\n".join(self.log)


def _compare(a, b) -> str | None:
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        x, y = np.asarray(a.array), np.asarray(b.array)
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"shape/dtype {x.shape} {x.dtype} vs eager {y.shape} {y.dtype}"
        if x.dtype.kind == "f":
            tol = 1e-4 if x.dtype.itemsize <= 4 else 1e-10
            if not np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True):
                return f"max abs difference {float(np.nanmax(np.abs(x - y))):.3g}"
        elif not np.array_equal(x, y):
            return "values differ"
        return None
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        for u, v in zip(a, b):
            r = _compare(u, v)
            if r:
                return r
        return None
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for k in a:
            r = _compare(a[k], b[k])
            if r:
                return r
        return None
    return f"output structure {type(a).__name__} vs eager {type(b).__name__}"


class OptimizedModule(Module):
    """``compile(module)``: calls go through a ``CompiledFunction`` of the module's
    ``__call__``; the original module is ``_orig_mod`` (PyTorch's name; state_dict keys get
    the ``_orig_mod.`` prefix, as torch.compile's wrapper)."""

    def __init__(self, mod: Module, fullgraph: bool = False):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", CompiledFunction(mod.__call__, module=mod,
                                                                fullgraph=fullgraph))

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def train(self, mode: bool = True):
        self._orig_mod.train(mode)
        return super().train(mode)

    def explain(self) -> str:
        return self._compiled.explain()


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None,
            options=None, disable: bool = False):
    """Compile a Module or a function of tensors (``torch.compile``'s signature); used as
    ``compile(fn)``, ``compile(model)`` or a decorator ``@compile`` / ``@compile(...)``."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    _options.check(backend, mode, options)
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph=fullgraph)
    if not callable(model):
        raise TypeError(f"compile: expected a Module or a callable, got {type(model).__name__}")
    cf = CompiledFunction(model, fullgraph=fullgraph)
    try:
        cf.__wrapped__ = model
        cf.__name__ = getattr(model, "__name__", "compiled")
        cf.__doc__ = getattr(model, "__doc__", None)
    except AttributeError:
        pass
    return cf


def compile_in_place(module: Module, *args, **kwargs) -> None:
    """``Module.compile(*args, **kwargs)`` (torch's): this module's ``forward`` becomes a
    ``CompiledFunction`` of the class's forward bound to it, guarded on ``module.training``
    (``compile``'s arguments; ``disable=True`` leaves it eager). Calls, hooks, submodules and
    ``state_dict`` keys are unchanged: the module is compiled in place, not wrapped."""
    import inspect

    bound = inspect.signature(compile).bind(module, *args, **kwargs)  # compile's arguments, or TypeError
    bound.apply_defaults()
    _options.check(bound.arguments["backend"], bound.arguments["mode"], bound.arguments["options"])
    if kwargs.get("disable", False):
        return
    forward = type(module).forward.__get__(module)
    module.__dict__["forward"] = CompiledFunction(forward, module=module,
                                                  fullgraph=kwargs.get("fullgraph", False))


def closure_tensors(fn) -> dict:
    """The Tensors ``fn`` closes over, by id: constants a trace of ``fn`` may read."""
    out: dict = {}
    for cell in (getattr(fn, "__closure__", None) or ()):
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later in the enclosing scope)
            continue
        if isinstance(v, Tensor):
            out[id(v)] = v
    return out
