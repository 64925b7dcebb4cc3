"""The op dispatch hook: how ``Tensor`` methods reach ops without importing upward.

``autograd`` (L2) defines ``Tensor``; the differentiable ops live in ``ops`` (L3). Each op
registers its functional form here under its PyTorch name (``register("add")``), and
``Tensor.add`` looks the name up in ``OPS``.

One route for every op. ``register`` returns a thin wrapper, and that wrapper is what the
module-level name, the ``OPS`` entry, ``shardflow.<name>`` and ``nn.functional`` all call.
While no placement exists the wrapper only checks one variable and calls the op. The
distributed layer (L6) installs a *global handler* with :func:`set_global_handler` when the
first placement (mesh) is made (``shardflow/distributed/route.py``: ``enable()``, undone by
``disable()``); from then on the handler sees every op call first, and handles it when an
argument is a global tensor (sbp rules, boxing), otherwise it calls the plain op. This is
the only way an upper layer changes how ops run.

Autocast (L5, ``shardflow.amp``) installs its hook with :func:`set_autocast_handler` while
an enabled autocast region is open; it is composed into the same slot (outermost, with
``nxt`` = the other hooks or the plain call), so outside autocast the cost stays one check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..backend.meta import MetaTensorError

OPS: dict[str, Callable] = {}

# The global-tensor handler: ``handler(name, func, args, kwargs)``; None until the distributed
# layer installs one. A one-element list so the wrappers read it without a global statement.
_global_handler: list[Callable | None] = [None]


# What feeds that one slot: [global-tensor handler, profiler hook, autocast hook]. The profiler
# (``shardflow.profiler``) times each op with ``hook(name, func, args, kwargs)``; autocast
# (``shardflow.amp``) casts with ``hook(name, func, args, kwargs, nxt=...)``; all are
# composed into ``_global_handler`` so an op still costs one check when none is set.
_hooks: list[Callable | None] = [None, None, None]


def _call_plain(name, func, args, kwargs):
    return func(*args, **kwargs)


def _compose() -> None:
    g, p, a = _hooks
    if p is None or g is None:
        inner = p or g
    else:
        def inner(name, func, args, kwargs):  # profiler outside, so it times the global handling
            return p(name, lambda *xs, **kw: g(name, func, xs, kw), args, kwargs)

    # autocast outermost: it casts, then the call goes on as without it
    _global_handler[0] = inner if a is None else functools.partial(a, nxt=inner or _call_plain)


def set_global_handler(handler: Callable | None) -> None:
    """Install (or remove, with None) the hook that sees every registered op call first."""
    _hooks[0] = handler
    _compose()


def set_op_profiler(hook: Callable | None) -> None:
    """Install (or remove, with None) the profiler's op hook (see ``_hooks``)."""
    _hooks[1] = hook
    _compose()


def set_autocast_handler(handler: Callable | None) -> None:
    """Install (or remove) the autocast hook ``handler(name, func, args, kwargs, nxt=...)``: it
    sees each op call first and passes the (cast) call on to ``nxt`` (see ``_hooks``)."""
    _hooks[2] = handler
    _compose()


def register(name: str, *aliases: str):
    """Decorator: make ``func`` the implementation of op ``name`` (and ``aliases``).

    Returns the routed form of ``func`` (see the module docstring), which keeps ``func``'s
    name and docstring and exposes the unrouted function as ``__wrapped__``.
    """

    def deco(func):
        func = getattr(func, "__wrapped__", func)  # an alias of an op registered already
        handler = _global_handler

        def routed(*args, **kwargs):
            h = handler[0]
            try:  # free when nothing is raised (zero-cost exception handling)
                if h is None:
                    return func(*args, **kwargs)
                return h(name, func, args, kwargs)
            except MetaTensorError as e:  # name the op that reached meta-tensor work
                raise e.for_op(name) from None

        routed.__name__ = func.__name__
        routed.__qualname__ = func.__qualname__
        routed.__doc__ = func.__doc__
        routed.__module__ = func.__module__
        routed.__wrapped__ = func
        routed.op_name = name
        for n in (name, *aliases):
            OPS[n] = routed
        return routed

    return deco


class _MissingOp:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"op '{self.name}' is not implemented in shardflow (no function registered for it); "
            "import shardflow (which registers all ops) or open an issue naming the op"
        )


def op(name: str) -> Callable:
    f = OPS.get(name)
    return f if f is not None else _MissingOp(name)
