"""The op dispatch hook: how ``Tensor`` methods reach ops without importing upward.

``autograd`` (L2) defines ``Tensor``; the differentiable ops live in ``ops`` (L3). Each op
registers its functional form here under its PyTorch name (``register("add")``), and
``Tensor.add`` looks the name up in ``OPS``.

One route for every op. ``register`` returns a thin wrapper (the *routed* form), and that
wrapper is what the module-level name, ``shardflow.<name>`` and ``nn.functional`` call.
While no hook is installed the wrapper only checks one variable and calls the op. The
distributed layer (L6) installs a *global handler* with :func:`set_global_handler` when the
first placement (mesh) is made (``shardflow/distributed/route.py``: ``enable()``, undone by
``disable()``); from then on the handler sees every op call first, and handles it when an
argument is a global tensor (sbp rules, boxing), otherwise it calls the plain op. This is
the only way an upper layer changes how ops run.

The ``OPS`` table (what ``Tensor`` methods call: ``x.exp()`` is ``OPS["exp"](x)``) holds
the *plain* functions while no hook is installed, and the routed forms while one is
(:func:`_compose` swaps them, a C-level ``dict.update``): the routed wrapper's ``*args,
**kwargs`` call costs about 1,500 instructions, a tenth of a 16-element op, and only a hook
needs it. So code must look ops up in ``OPS`` when it calls them (as ``Tensor`` does),
never keep an entry; ``plain(name)`` is the unrouted function either way. The binary
operators go one step further: ``Tensor.__mul__`` *is* the op's two-argument form
(``register("mul", operator=...)``) while no hook is installed and the routed ``mul`` while
one is (:func:`set_method_owner`), so ``x * y`` enters no Python frame before the op's own.
One difference while no hook is installed: a ``MetaTensorError`` raised directly by an op
reached through a Tensor method is named by the innermost routed op inside it, if any.

Tensor methods. Every registered name is also a method of ``Tensor`` (``x.exp()``,
``x.sum(1)``), unless ``tensor.py`` spells that method out: ``register`` sets the routed
function as a class attribute of the class ``tensor.py`` names with :func:`set_method_owner`.
Why not ``Tensor.__getattr__`` (looking names up in ``OPS`` on a miss, as before): CPython
3.11 specialises attribute reads (``t.array``, ``t.requires_grad``, ``t.add``) only for
classes whose ``tp_getattro`` is the generic one, and defining ``__getattr__`` replaces it,
so *every* attribute read of every Tensor took the slow generic path (measured: 10% of a
16-element op's instructions, scripts/op_cost.py).

``out=``: the routed form of an op that does not declare ``out`` itself takes it off the call
and writes the result into it (``out_arg.py``), so every op has PyTorch's ``out=``. NumPy's
keyword spellings (``axis=``, ``keepdims=``) are renamed by the routed form when the op's call
fails to bind (``numpy_kwargs.py``), so they cost nothing otherwise.

Autocast (L5, ``shardflow.amp``) installs its hook with :func:`set_autocast_handler` while
an enabled autocast region is open; it is composed into the same slot (outermost, with
``nxt`` = the other hooks or the plain call), so outside autocast the cost stays one check.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ..backend.cpu_oom import as_torch_oom, as_torch_overflow
from ..backend.meta import MetaTensorError
from .numpy_kwargs import translate
from .out_arg import call_with_out, declares_out

OPS: dict[str, Callable] = {}  # name -> plain function (no hook installed) or routed form
_PLAIN: dict[str, Callable] = {}
_ROUTED: dict[str, Callable] = {}

# The global-tensor handler: ``handler(name, func, args, kwargs)``; None until the distributed
# layer installs one. A one-element list so the wrappers read it without a global statement.
_global_handler: list[Callable | None] = [None]


# What feeds that one slot: [global-tensor handler, profiler hook, autocast hook, tracer,
# counter]. The profiler (``shardflow.profiler``) times each op with ``hook(name, func, args,
# kwargs)``; autocast (``shardflow.amp``) casts with ``hook(name, func, args, kwargs, nxt=...)``;
# the symbolic tracer (``shardflow.fx``, while a trace runs) records calls on its proxies with
# ``hook(name, func, args, kwargs, nxt=...)``; the FLOP counter (``shardflow.utils.flop_counter``,
# inside its ``with`` block) sees each call with the same signature; all are composed into
# ``_global_handler`` so an op still costs one check when none is set.
_hooks: list[Callable | None] = [None, None, None, None, None]


def _call_plain(name, func, args, kwargs):
    return func(*args, **kwargs)


def _compose() -> None:
    g, p, a, t, c = _hooks
    if p is None or g is None:
        inner = p or g
    else:
        def inner(name, func, args, kwargs):  # profiler outside, so it times the global handling
            return p(name, lambda *xs, **kw: g(name, func, xs, kw), args, kwargs)

    # autocast outermost: it casts, then the call goes on as without it
    handler = inner if a is None else functools.partial(a, nxt=inner or _call_plain)
    # the counter outside autocast: it counts the call as the program made it
    handler = handler if c is None else functools.partial(c, nxt=handler or _call_plain)
    # the tracer outermost: a call on proxies is recorded, not cast or run
    _global_handler[0] = handler if t is None else functools.partial(t, nxt=handler or _call_plain)
    OPS.update(_PLAIN if _global_handler[0] is None else _ROUTED)
    for dunder, name in _operator_methods.items():
        _install_operator(dunder, name)


def only_global_handler_active() -> bool:
    """No op hook is installed but (perhaps) the global-tensor handler: neither the profiler
    nor autocast (nor a tracer composed into the same slot) needs to see op calls, so code
    that runs an op's node directly for local tensors changes nothing."""
    return (_hooks[1] is None and _hooks[2] is None and _hooks[3] is None and _hooks[4] is None
            and _global_handler[0] is _hooks[0])


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


def set_trace_handler(handler: Callable | None) -> Callable | None:
    """Install (or remove) the symbolic tracer's hook ``handler(name, func, args, kwargs,
    nxt=...)`` (``shardflow.fx``, only while a trace runs): it sees each op call first,
    outermost, and records the call when an argument is a proxy, else passes it to ``nxt``.
    Returns the hook it replaces (to be put back)."""
    previous, _hooks[3] = _hooks[3], handler
    _compose()
    return previous


def set_op_counter(hook: Callable | None) -> Callable | None:
    """Install (or remove) the FLOP counter's hook ``hook(name, func, args, kwargs, nxt=...)``
    (``shardflow.utils.flop_counter``, inside a ``FlopCounterMode`` block): it sees each op
    call and passes it on to ``nxt``. Returns the hook it replaces (to be put back)."""
    previous, _hooks[4] = _hooks[4], hook
    _compose()
    return previous


def op_counter_active() -> bool:
    """Whether a FLOP counter is counting: compiled replays then run eagerly, so it sees the ops."""
    return _hooks[4] is not None


def routed(name: str) -> Callable:
    """The routed (public) form of op ``name``: what ``shardflow.<name>`` is."""
    f = _ROUTED.get(name)
    return f if f is not None else _MissingOp(name)


def register(name: str, *aliases: str, operator: Callable | None = None):
    """Decorator: make ``func`` the implementation of op ``name`` (and ``aliases``).

    Returns the routed form of ``func`` (see the module docstring), which keeps ``func``'s
    name and docstring and exposes the unrouted function as ``__wrapped__``. ``operator``:
    the op's two-argument form ``operator(input, other)``, equal to ``func(input, other)``
    (e.g. ``function.binary_operator``), which the method owner's operator methods for
    ``name`` (``x * y``) call while no hook is installed (see :func:`set_method_owner`).
    """

    def deco(func):
        if operator is not None:
            _OPERATOR_FORMS[name] = operator
        else:  # re-registered without one: the operators must not keep the old op's form
            _OPERATOR_FORMS.pop(name, None)
        func = getattr(func, "__wrapped__", func)  # an alias of an op registered already
        handler = _global_handler
        routes_out = not declares_out(func)  # out= written by the routed form (out_arg.py)

        def routed(*args, **kwargs):
            h = handler[0]
            try:  # free when nothing is raised (zero-cost exception handling)
                if kwargs and routes_out and "out" in kwargs:
                    return call_with_out(name, routed, args, kwargs)
                if h is None:
                    return func(*args, **kwargs)
                return h(name, func, args, kwargs)
            except MetaTensorError as e:  # name the op that reached meta-tensor work
                raise e.for_op(name) from None
            except MemoryError as e:  # NumPy's allocation failure as torch's RuntimeError
                err = as_torch_oom(e, name)
                if err is e:  # converted already (an inner op), or not NumPy's
                    raise
                raise err from None
            except TypeError:  # NumPy's keyword spellings (axis=, keepdims=): numpy_kwargs.py
                renamed = translate(func, kwargs) if kwargs else None
                if renamed is None:
                    raise
            except ValueError as e:  # NumPy's "array is too big" as torch's overflow RuntimeError
                err = as_torch_overflow(e, name)
                if err is e:
                    raise
                raise err from None
            return routed(*args, **renamed)

        routed.__name__ = func.__name__
        routed.__qualname__ = func.__qualname__
        routed.__doc__ = func.__doc__
        routed.__module__ = func.__module__
        routed.__wrapped__ = func
        routed.op_name = name
        for n in (name, *aliases):
            _PLAIN[n] = func
            _ROUTED[n] = routed
            OPS[n] = func if handler[0] is None else routed
            _install_method(n, routed)
            for dunder in _operator_names.get(n, ()):
                _install_operator(dunder, n)
        return routed

    return deco


# The class whose methods the registered ops become (autograd's Tensor, named by tensor.py),
# and the method names this module set on it (re-registering a name replaces its method).
_method_owner: list[type | None] = [None]
_installed_methods: set[str] = set()
# Operator methods that *are* an op (``x * y`` is ``mul(x, y)``): dunder -> op name, and the
# reverse (op name -> dunders). The owner's attribute is the op itself (``operator_form``),
# kept in step by ``register`` and ``_compose``, rather than a method that looks it up: that
# method was a Python frame entered from C (``slot_nb_multiply``), about 800 instructions of
# a 16-element op (scripts/op_cost.py).
_operator_methods: dict[str, str] = {}
_operator_names: dict[str, tuple[str, ...]] = {}
_OPERATOR_FORMS: dict[str, Callable] = {}  # op name -> its two-argument form (register)


def set_method_owner(cls: type, operators: dict[str, str] | None = None) -> None:
    """Make every registered op (now and later) a method of ``cls``: ``x.name(...)`` calls
    ``OPS[name](x, ...)``. Names ``cls`` defines itself (or inherits) keep their own
    method; dunder names are never set, except those in ``operators`` (dunder -> op name,
    for ops whose functional form takes ``(self, other)`` as the operator does): they are
    set to the op's two-argument form (``register(..., operator=)``; else ``OPS[name]``)
    while no hook is installed and to the routed form while one is, now, whenever the op
    is registered and whenever a hook is installed or removed: ``x * y`` runs no frame
    before the op's own."""
    _method_owner[0] = cls
    for name, f in _ROUTED.items():  # the routed forms: a method must see the hooks
        _install_method(name, f)
    for dunder, name in (operators or {}).items():
        _operator_methods[dunder] = name
        _operator_names[name] = _operator_names.get(name, ()) + (dunder,)
        _install_operator(dunder, name)


def operator_methods() -> dict[str, str]:
    """The operator methods that are ops (dunder -> op name; see :func:`set_method_owner`)."""
    return dict(_operator_methods)


def operator_form(name: str) -> Callable:
    """What the operator methods for op ``name`` call now (see :func:`set_method_owner`)."""
    f = OPS.get(name) if _global_handler[0] is not None else _OPERATOR_FORMS.get(name, OPS.get(name))
    return f if f is not None else _MissingOp(name)


def _install_operator(dunder: str, name: str) -> None:
    cls = _method_owner[0]
    f = operator_form(name) if name in OPS else None
    if cls is not None and f is not None and cls.__dict__.get(dunder) is not f:
        setattr(cls, dunder, f)


def method_names() -> list[str]:
    """The method names :func:`set_method_owner`'s class got from the op table."""
    return sorted(_installed_methods)


def _install_method(name: str, routed: Callable) -> None:
    cls = _method_owner[0]
    if cls is None or name.startswith("__"):
        return
    if name not in _installed_methods and hasattr(cls, name):
        return  # spelled out by the class (a method, property or slot): it wins
    setattr(cls, name, routed)
    _installed_methods.add(name)


class _MissingOp:
    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"op '{self.name}' is not implemented in shardflow (no function registered for it); "
            "import shardflow (which registers all ops) or open an issue naming the op"
        )


def op(name: str) -> Callable:
    """The op ``name`` as ``OPS`` has it now (call it now: see the module docstring)."""
    f = OPS.get(name)
    return f if f is not None else _MissingOp(name)


def plain(name: str) -> Callable:
    """The registered function ``name`` without the hook route (what a hook calls)."""
    f = _PLAIN.get(name)
    return f if f is not None else _MissingOp(name)
