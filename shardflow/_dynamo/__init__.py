"""``torch._dynamo``: the names training scripts reach for around ``torch.compile``.

``config`` holds Dynamo's settings (``config.py``: ``cache_size_limit`` is shardflow's compile
cache limit; the rest are recorded). The functions are ``torch.compiler``'s (``reset``,
``disable``, ``allow_in_graph``, ``assume_constant_result``, ``is_compiling``), and the markers
that tell Dynamo about shapes or graph breaks (``mark_dynamic``, ``mark_static``,
``maybe_mark_dynamic``, ``graph_break``, ``forbid_in_graph``) change nothing: shardflow's tracer
records op calls and keys its graphs by the inputs' shapes, so every new shape is traced anew
and there is no Python bytecode to break. ``optimize(backend)`` is ``torch.compile(backend=...)``
as a decorator (Dynamo's old spelling). ``list_backends()`` names the backends ``compile``
accepts (torch's names; an unknown one is ``exc.InvalidBackend``, an unknown mode a
RuntimeError: ``jit/compile_options.py``), ``explain(fn)(*args)`` reports the traced graph.
"""

from __future__ import annotations

from ..compiler import allow_in_graph, assume_constant_result, disable, is_compiling, reset
from ..jit import compile as _compile
from ..jit.compile_options import list_backends
from . import config, exc
from .explain import ExplainOutput, explain

__all__ = ["config", "reset", "disable", "allow_in_graph", "assume_constant_result", "is_compiling",
           "mark_dynamic", "mark_static", "maybe_mark_dynamic", "graph_break", "forbid_in_graph",
           "optimize", "list_backends", "exc", "explain", "ExplainOutput"]


def _tensor_check(name, t):
    if not hasattr(t, "shape"):
        raise TypeError(f"torch._dynamo.{name}: expected a tensor, got {type(t).__name__}")


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None) -> None:
    """A shape hint for Dynamo; nothing to do here (graphs are keyed by the input shapes)."""
    _tensor_check("mark_dynamic", t)


def maybe_mark_dynamic(t, index) -> None:
    """As ``mark_dynamic``: nothing to do."""
    _tensor_check("maybe_mark_dynamic", t)


def mark_static(t, index=None) -> None:
    """A shape hint for Dynamo; shardflow's graphs are static per shape already."""


def graph_break() -> None:
    """Dynamo would split its graph here; shardflow's tracer records op calls only."""


def forbid_in_graph(fn):
    """Returned unchanged (see the module docstring)."""
    if not callable(fn):
        raise TypeError(f"forbid_in_graph: expected a function, got {type(fn).__name__}")
    return fn


def optimize(backend="inductor", *, nopython: bool = False, dynamic=None, disable: bool = False, **kwargs):
    """``@torch._dynamo.optimize("inductor")``: ``torch.compile(fn, backend=..., fullgraph=nopython)``."""
    def wrap(fn):
        if disable:
            return fn
        return _compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic)
    return wrap
