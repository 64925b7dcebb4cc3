"""``torch.compiler``: the compiler switches and markers programs call around ``torch.compile``.

shardflow's compiler is ``shardflow.compile`` (``jit/api.py``: trace the function once through
the op dispatcher, replay the graph; docs/KERNELS.md). The names here are what programs write
around it:

* ``compile`` is ``shardflow.compile``; ``is_compiling()`` / ``is_dynamo_compiling()`` are True
  while ``compile`` traces a function (its Python body runs once, eagerly, then the recorded
  graph replays), so ``if not torch.compiler.is_compiling(): log(...)`` keeps the logging out
  of the graph as in PyTorch; ``is_exporting()`` is False (there is no ``torch.export``);
* markers that tell Dynamo how to treat a function (``disable``, ``allow_in_graph``,
  ``assume_constant_result``, ``substitute_in_graph``, ``nested_compile_region``) return the
  function unchanged: shardflow's tracer records op calls, not Python bytecode, so there is
  nothing to tell it;
* ``reset()``, ``cudagraph_mark_step_begin()`` have nothing to clear or mark;
* ``set_stance(...)`` checks its arguments as PyTorch does and records the stance (function,
  context manager or decorator; ``current_stance()`` reads it); ``shardflow.compile`` does not
  read it (a compiled graph computes what the eager code computes, so "force_eager" changes
  speed, not results);
* ``get_default_backend()`` / ``set_default_backend(b)`` record a name;
* ``list_backends()`` answers ``["inductor"]``: the one backend name ``compile`` accepts by
  default (every ``backend=`` runs shardflow's tracer).
"""

from __future__ import annotations

import functools

from ..jit import compile
from ..jit.trace import tracing as _tracing

__all__ = [
    "compile", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable", "allow_in_graph",
    "assume_constant_result", "substitute_in_graph", "nested_compile_region", "reset",
    "cudagraph_mark_step_begin", "set_stance", "list_backends", "wrap_numpy", "get_default_backend",
    "set_default_backend",
]

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile", "aot_eager_then_compile")


def is_compiling() -> bool:
    """True while ``shardflow.compile`` traces the function now running (see the docstring)."""
    return _tracing()


def is_dynamo_compiling() -> bool:
    """As ``is_compiling()`` (shardflow's tracer plays Dynamo's part)."""
    return _tracing()


def is_exporting() -> bool:
    """False: shardflow has no ``torch.export``."""
    return False


class _Disabled:
    """``disable()`` without a function: a decorator that returns its function unchanged, and a
    context manager that does nothing (what ``torch.compiler.disable()`` is used as)."""

    def __call__(self, fn):
        return fn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Dynamo would not compile ``fn``; shardflow's tracer records ``fn``'s op calls like any
    others' (they compute the same values), so ``fn`` is returned unchanged."""
    if not isinstance(recursive, bool):
        raise TypeError(f"disable: recursive must be a bool, got {type(recursive).__name__}")
    if fn is None:
        return _Disabled()
    if not callable(fn):
        raise TypeError(f"disable: expected a function or None, got {type(fn).__name__}")
    return fn


def _marker(name: str):
    def mark(fn):
        if not callable(fn):
            raise TypeError(f"{name}: expected a function, got {type(fn).__name__}")
        return fn

    mark.__name__ = name
    mark.__doc__ = (f"``torch.compiler.{name}(fn)``: a hint to Dynamo; shardflow's tracer records "
                    "``fn``'s op calls as they run, so ``fn`` is returned unchanged.")
    return mark


allow_in_graph = _marker("allow_in_graph")
assume_constant_result = _marker("assume_constant_result")
wrap_numpy = _marker("wrap_numpy")


def substitute_in_graph(original_fn, *, can_constant_fold_through: bool = False,
                        skip_signature_check: bool = False):
    """A decorator registering a traceable twin of ``original_fn`` for Dynamo. The twin is
    returned unchanged (shardflow's tracer never needs it; PyTorch returns a wrapper that calls
    the twin outside compilation)."""
    if not callable(original_fn):
        raise TypeError(f"substitute_in_graph: original_fn must be callable, got "
                        f"{type(original_fn).__name__}")
    return _marker("substitute_in_graph")


def nested_compile_region(fn=None, *, options=None, max_reuse_entries: int = 8, reuse_hash_fn=None):
    """Marks a region Dynamo compiles once and reuses; the function is returned unchanged."""
    if fn is None:
        return _marker("nested_compile_region")
    return _marker("nested_compile_region")(fn)


def reset() -> None:
    """Nothing to clear: each ``compile`` result keeps its own graphs (drop it to free them)."""


def cudagraph_mark_step_begin() -> None:
    """Nothing to mark: ``compile`` records no CUDA graphs."""


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """``["inductor"]``: every ``backend=`` runs shardflow's tracer; this is the default name."""
    return ["inductor"]


_default_backend: list = ["inductor"]


def get_default_backend():
    """The ``backend`` name (or callable) ``set_default_backend`` recorded ("inductor" at start)."""
    return _default_backend[0]


def set_default_backend(backend) -> None:
    """Record the default backend (None: back to "inductor"); ``compile`` runs shardflow's tracer
    whatever the backend."""
    if backend is not None and not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"set_default_backend: expected a backend name, a callable or None, got "
                        f"{type(backend).__name__}")
    _default_backend[0] = "inductor" if backend is None else backend


_stance = ["default"]


def current_stance() -> str:
    """The stance last set by ``set_stance`` ("default" at start)."""
    return _stance[0]


class set_stance:
    """``torch.compiler.set_stance(stance, *, skip_guard_eval_unsafe=False, force_backend=None)``:
    sets the stance now (a function call), and as a context manager or decorator sets it for the
    block or the call and restores the previous one after. Arguments are checked as PyTorch
    does; the stance is recorded, not acted on (see the module docstring)."""

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend=None):
        if stance not in STANCES:
            raise ValueError(f"set_stance: unknown stance {stance!r}; expected one of {list(STANCES)}")
        if force_backend is not None and stance != "default":
            raise RuntimeError("non-default stance cannot have force_backend set")
        self.stance = stance
        self.prev = _stance[0]
        _stance[0] = stance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _stance[0] = self.prev
        return False

    def __call__(self, fn):
        stance, prev = self.stance, self.prev
        _stance[0] = prev  # as a decorator, the stance holds only during calls

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            before = _stance[0]
            _stance[0] = stance
            try:
                return fn(*args, **kwargs)
            finally:
                _stance[0] = before

        return with_stance
