"""``torch.fx.Node``: one operation of a :class:`~shardflow.fx.Graph`, and the argument helpers.

A node is one of torch's six opcodes: ``placeholder`` (a forward argument), ``get_attr`` (a
parameter, buffer or attribute of the root module, by dotted name), ``call_function`` (a
free function: ``operator.add``, ``torch.relu``), ``call_method`` (a Tensor method by name),
``call_module`` (a submodule by dotted name) and ``output`` (what the forward returns).
``args``/``kwargs`` hold Python values and other nodes; ``users`` (a dict used as an ordered
set, as torch's) is kept in step whenever ``args``/``kwargs`` are set, so passes can walk
the graph both ways. Nodes form a doubly linked list owned by their graph (``prev``/``next``,
``prepend``/``append``).

``map_arg(a, fn)`` applies ``fn`` to every node inside a (nested) argument;
``map_aggregate(a, fn)`` to every leaf. Both rebuild tuples, lists, dicts and slices as
torch's do.
"""

from __future__ import annotations

import builtins
import operator
import sys
import types
from typing import Any

# functions whose result differs call to call (kept by dead-code elimination, as torch's)
_RANDOM = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                     "bernoulli", "multinomial", "normal", "poisson", "dropout", "alpha_dropout",
                     "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "rrelu"})
OPCODES = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")


def map_aggregate(a, fn):
    """``fn`` applied to every leaf of ``a`` (tuples, lists, dicts and slices are rebuilt;
    a namedtuple keeps its type)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """``fn`` applied to every :class:`Node` inside ``a`` (other leaves are kept)."""
    if not callable(fn):
        raise TypeError(f"torch.fx.map_arg(a, fn): fn must be a callable, got {type(fn).__name__}")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _collect_nodes(a) -> dict:
    found: dict = {}
    map_arg(a, lambda n: found.setdefault(n))
    return found


def qualified_name(func) -> str:
    """How torch prints a function target: ``operator.add``, ``builtins.getattr``, and for
    shardflow's own functions torch's spelling (``torch.relu``,
    ``torch.nn.functional.relu``): a traced program runs with ``torch`` meaning shardflow."""
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return f"builtins.{func.__name__}"
    name = getattr(func, "__name__", None) or type(func).__name__
    if isinstance(func, types.BuiltinFunctionType) and getattr(operator, name, None) is func:
        return f"operator.{name}"
    module = getattr(func, "__module__", None) or ""
    public = _public_module(func, name)
    if public is not None:
        return f"{public}.{name}"
    return f"{module}.{name}" if module else name


def _public_module(func, name):
    """``torch`` / ``torch.nn.functional`` when ``func`` is shardflow's public name there (a
    registered op is ``shardflow.<op name>``: autograd/dispatch.py)."""
    from ..autograd import dispatch
    from ..nn import functional

    op_name = getattr(func, "op_name", None)
    if op_name == name and dispatch.routed(op_name) is func:
        return "torch"
    if getattr(functional, name, None) is func:
        return "torch.nn.functional"
    return None


def type_repr(t) -> str | None:
    """A forward annotation as torch.fx prints it (``torch.Tensor``, ``int``); None for
    what it cannot name (string annotations, typing forms)."""
    if not isinstance(t, type):
        return None
    if t.__module__ == "builtins":
        return t.__qualname__
    module = t.__module__.split(".")[0]
    if module == "shardflow" and getattr(sys.modules["shardflow"], t.__name__, None) is t:
        return f"torch.{t.__name__}"
    return None


def _format_arg(arg, max_list_len=float("inf")) -> str:
    """An argument as torch's Node.format_node writes it (nodes as ``%name``)."""
    if isinstance(arg, Node):
        return "%" + str(arg)
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)


class Node:
    """One operation of a graph (see the module docstring). Made by ``Graph.create_node``."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict,
                 return_type=None) -> None:
        if op not in OPCODES:
            raise ValueError(f"Node: op must be one of {OPCODES}, got {op!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"Node {name!r}: a {op} node's target must be a string (the name), "
                             f"got {type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node {name!r}: a call_function node's target must be callable, "
                             f"got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict = {}
        self.users: dict = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # -- linked list --------------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    def prepend(self, x: Node) -> None:
        """Put ``x`` just before this node (taking it out of where it was)."""
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Put ``x`` just after this node."""
        self._next.prepend(x)

    # -- arguments ----------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def stack_trace(self) -> str | None:
        """Where the node was made, when recorded (``meta['stack_trace']``; the tracer does
        not record one, as torch's without ``record_stack_traces``)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    @property
    def all_input_nodes(self) -> list:
        """The nodes this node's args and kwargs use, in order of first appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        self._args = tuple(map_aggregate(tuple(new_args), lambda x: x))
        self._kwargs = dict(new_kwargs)
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = _collect_nodes((self._args, self._kwargs))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb=lambda user: True, *,
                              propagate_meta: bool = False) -> list:
        """Make every user of this node use ``replace_with`` instead; returns those users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        to_process = list(self.users)
        replaced = []
        for use in to_process:
            if not delete_user_cb(use):
                continue
            replaced.append(use)
            use._replace_input(self, replace_with)
        return replaced

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Use ``new_input`` wherever this node's arguments use ``old_input``."""
        self._replace_input(old_input, new_input)

    def _replace_input(self, old, new) -> None:
        def swap(n):
            return new if n is old else n

        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node although nothing uses it, as
        torch decides: placeholders and the output; a ``call_function`` that writes in place
        (a name ending in ``_``, ``operator.setitem``) or draws random numbers (with
        ``impure_random``); a ``call_module`` whose module sets ``_is_impure``. A
        ``call_method`` is pure (torch's rule, in-place methods included)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            module = self.graph.owning_module
            if module is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return bool(getattr(module.get_submodule(self.target), "_is_impure", False))
        if self.op == "call_function":
            name = getattr(self.target, "__name__", "")
            if self.target in (operator.setitem, operator.delitem) or name == "_assert":
                return True
            if name.endswith("_") and not name.endswith("__"):
                return True
            return impure_random and name in _RANDOM
        return False

    # -- printing -----------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def _pretty_target(self) -> str:
        if self.op == "call_function":
            return qualified_name(self.target)
        return str(self.target)

    def format_node(self, placeholder_names=None, maybe_return_typename=None) -> str | None:
        """The node as one line of ``print(graph)`` (torch's format)."""
        typename = type_repr(self.type)
        head = f"%{self.name} : {typename + ' ' if typename else ''}[num_users={len(self.users)}]"
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            if placeholder_names is not None:
                placeholder_names.append(self.target)
                return None
            return f"{head} = placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head} = get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        return (f"{head} = {self.op}[target={self._pretty_target()}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")
