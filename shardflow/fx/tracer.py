"""``torch.fx.Tracer`` and ``symbolic_trace``: run a module's forward on proxies, record a Graph.

How calls reach the tracer, without patching anything: while :meth:`Tracer.trace` runs it
installs three hooks that lower layers expose for this, and uninstalls them when it ends,
whatever happens:

* the op dispatcher's tracer slot (``autograd.dispatch.set_trace_handler``): a registered op
  called with a proxy anywhere in its arguments (``torch.relu(x)``, ``torch.cat([x, y])``,
  ``F.relu(x)`` which calls the ``relu`` op) becomes a ``call_function`` node whose target is
  the op's public function (``shardflow.relu``, printed ``torch.relu``); other calls run as
  usual. Outside a trace the slot is empty and an op costs what it did (one check);
* ``Module.__call__``'s interceptor (``nn.module.set_call_interceptor``): a call of a leaf
  module (:meth:`Tracer.is_leaf_module`: shardflow's own ``nn`` layers, as torch's
  ``torch.nn`` ones, but ``Sequential`` / ``ModuleList`` / ``ModuleDict``) becomes one
  ``call_module`` node; any other module is traced through, hooks included;
* parameter reads (``nn.module.set_parameter_interceptor``): ``self.weight`` gives a proxy of
  a ``get_attr`` node (one per parameter), so ``self.w.t()`` is recorded, as torch's patched
  ``Module.__getattr__`` does.

Buffers and other tensors the program passes to an op become ``get_attr`` nodes naming where
they live on the root (found by identity, as torch's ``create_arg``); a tensor that is not an
attribute of the root is stored on it as ``_tensor_constant0``, ... .

Deviations from torch, plainly: a ``torch.nn.functional`` function that is a Python function
over a registered op is recorded as that op (``F.relu(x)`` gives ``torch.relu(x)``, not
``torch.nn.functional.relu(x, inplace = False)``); ``concrete_args`` are traced as
torch traces them (the placeholder kept as ``<name>_1`` with the parameter's own default,
the value used as a constant, an ``eq`` + assert node pair for a bool/int/float/str, an
is-None assert for None, torch's warning for anything else), but the generated code calls
the asserts by shardflow's names (``shardflow_fx_tracer__assert(...)`` where torch prints
``torch._assert(...)``).
``wrap(fn)`` marks a function to be recorded as one ``call_function`` node instead of being
traced through: the function must be called through the ``wrap`` result (``fn = fx.wrap(fn)``
or as a decorator), since shardflow does not rewrite a module's globals; torch's string form
``wrap("name")`` raises NotImplementedError saying so.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import math
import operator
import warnings

from ..autograd import dispatch
from ..autograd.tensor import Tensor
from ..nn import module as _module
from ..nn.module import Module
from ..nn.parameter import Parameter
from .graph import Graph
from .node import Node, map_aggregate
from .proxy import Proxy, TraceError

_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")
_BASE_TYPES = (str, int, float, bool, complex, type(None), type(Ellipsis), range)


def _has_proxy(a) -> bool:
    if isinstance(a, Proxy):
        return True
    if isinstance(a, tuple | list):
        return any(_has_proxy(x) for x in a)
    if isinstance(a, dict):
        return any(_has_proxy(x) for x in a.values())
    if isinstance(a, slice):
        return _has_proxy((a.start, a.stop, a.step))
    return False


class Tracer:
    """Records a program into a :class:`Graph` (see the module docstring). Subclass it and
    override :meth:`is_leaf_module` to choose which modules stay whole nodes."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant: bool = False) -> None:
        if param_shapes_constant:
            raise NotImplementedError("Tracer(param_shapes_constant=True): shardflow's tracer records "
                                      "shape reads of parameters as nodes; leave it False")
        if tuple(autowrap_modules) != (math,) or tuple(autowrap_functions):
            raise NotImplementedError(
                "Tracer(autowrap_modules=..., autowrap_functions=...): torch records calls of these "
                "by patching the traced code's globals, which shardflow does not do; decorate the "
                "functions with torch.fx.wrap instead (and leave these arguments out)")
        self.autowrap_modules = autowrap_modules
        self.autowrap_functions = ()
        self.root: Module | None = None
        self.graph: Graph | None = None
        self._module_paths: dict[int, str] = {}
        self._tensor_attrs: dict[int, str] = {}

    # -- what becomes a node ---------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Whether a call of ``m`` is one ``call_module`` node: shardflow's (or torch's) own
        ``nn`` layers are, containers and user modules are not."""
        module = type(m).__module__ or ""
        from_nn = module.startswith(("shardflow.nn", "torch.nn"))
        return from_nn and type(m).__name__ not in _CONTAINERS

    def path_of_module(self, mod: Module) -> str:
        """The dotted name of ``mod`` in the root (NameError if it is not a submodule)."""
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError(f"module {type(mod).__name__} is not installed as a submodule of the "
                            "traced module; assign it as an attribute (self.x = module) before tracing")
        return path

    def call_module(self, m: Module, forward, args, kwargs):
        """A leaf ``m`` becomes a ``call_module`` node; any other runs ``forward``."""
        path = self._module_paths.get(id(m))
        if path is None or not self.is_leaf_module(m, path):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", path, args, kwargs)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """A parameter read during the trace (``self.weight``): a proxy of a ``get_attr``
        node naming it on the root (one per parameter, cached), as torch's; any other value
        as it is."""
        if not isinstance(attr_val, Parameter):
            return attr_val
        path = self._tensor_attrs.get(id(attr_val))
        if path is None:
            return attr_val
        if path not in parameter_proxy_cache:
            parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {})
        return parameter_proxy_cache[path]

    # -- nodes and proxies -------------------------------------------------------------------
    def create_node(self, kind: str, target, args, kwargs, name=None, type_expr=None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None) -> Proxy:
        args_ = self.create_arg(tuple(args))
        kwargs_ = self.create_arg(dict(kwargs))
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """A program value as a node argument: proxies as their nodes, the root's tensors as
        ``get_attr`` nodes, other tensors as new constants on the root, containers element
        by element."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node) or isinstance(a, _BASE_TYPES):
            return a
        if isinstance(a, Tensor):
            path = self._tensor_attrs.get(id(a))
            if path is None:
                if isinstance(a, Parameter):
                    raise NameError("parameter is not a member of the traced module; register it "
                                    "on a submodule (self.p = nn.Parameter(...)) before tracing")
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                path = f"_tensor_constant{i}"
                setattr(self.root, path, a)
                self._tensor_attrs[id(a)] = path
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, tuple | list | dict | slice):
            return map_aggregate(a, lambda x: x if isinstance(x, _BASE_TYPES) else self.create_arg(x))
        if isinstance(a, Module):
            raise TraceError(f"a module ({type(a).__name__}) cannot be an argument of a traced call; "
                             "call it instead, or make it a leaf with Tracer.is_leaf_module")
        return a  # dtypes, devices, functions, other constants: kept as they are

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. See the "
                         "torch.fx docs on pytorch.org for a more detailed explanation of what "
                         "types of control flow can be traced, and check out the Proxy docstring "
                         "for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy):
        return self.create_proxy("call_method", "keys", (obj,), {})

    # -- tracing ------------------------------------------------------------------------------
    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """Run ``root`` (a Module's forward, or a function) on proxies; returns the Graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            bound_self = [root]
        elif callable(root):
            self.root = Module()
            fn = root
            bound_self = []
        else:
            raise TypeError(f"symbolic_trace: expected an nn.Module or a function, got {type(root).__name__}")
        concrete_args = dict(concrete_args or {})
        self.graph = Graph(tracer_cls=type(self))
        self._index_root()
        args, kwargs = self._placeholders(fn, bound_self, concrete_args)
        with self.hooks_installed(parameters=True), _wrapped_names_patched():
            result = fn(*bound_self, *args, **kwargs)
        returns = inspect.signature(fn).return_annotation
        self.create_node("output", "output", (self.create_arg(result),), {},
                         type_expr=None if returns is inspect.Signature.empty else returns)
        return self.graph

    def _index_root(self) -> None:
        """Where the root's submodules and tensors live (dotted names, found by identity)."""
        self._module_paths = {id(m): name for name, m in self.root.named_modules()}
        self._tensor_attrs = {}
        for mod_name, mod in self.root.named_modules():
            for k, v in list(vars(mod).items()) + list(mod._parameters.items()) + list(mod._buffers.items()):
                if isinstance(v, Tensor):
                    self._tensor_attrs.setdefault(id(v), f"{mod_name}.{k}" if mod_name else k)

    @contextlib.contextmanager
    def hooks_installed(self, parameters: bool = False):
        """While the block runs, op calls and module calls on proxies reach this tracer (the
        dispatcher's and ``Module.__call__``'s hooks), and with ``parameters`` parameter reads
        too (:meth:`getattr`); the previous hooks are put back after."""
        cache: dict = {}
        previous = [dispatch.set_trace_handler(self._op_hook), _module.set_call_interceptor(self._module_hook)]
        if parameters:
            previous.append(_module.set_parameter_interceptor(
                lambda module, name, value: self.getattr(name, value, cache)))
        try:
            yield
        finally:
            dispatch.set_trace_handler(previous[0])
            _module.set_call_interceptor(previous[1])
            if parameters:
                _module.set_parameter_interceptor(previous[2])

    def _placeholders(self, fn, bound_self, concrete_args):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[len(bound_self):]
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise ValueError(f"symbolic_trace(concrete_args=...): {sorted(unknown)} are not parameters "
                             f"of {getattr(fn, '__qualname__', fn)}; its parameters are {[p.name for p in params]}")
        args, kwargs = [], {}
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                star = "*" if p.kind is p.VAR_POSITIONAL else "**"
                raise NotImplementedError(
                    f"symbolic_trace: {getattr(fn, '__qualname__', fn)} takes {star}{p.name}; shardflow's "
                    "tracer makes one placeholder per named parameter. Give forward named parameters "
                    "(or trace a wrapper function that has them)")
            default = () if p.default is p.empty else (p.default,)
            if p.name in concrete_args:
                v = concrete_args[p.name]
                self._specialized(p.name, default, v)
            else:
                annotation = None if p.annotation is p.empty else p.annotation
                v = self.create_proxy("placeholder", p.name, default, {}, type_expr=annotation)
            if p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = v
            else:
                args.append(v)
        return args, kwargs

    def _specialized(self, name, default, value) -> None:
        """A ``concrete_args`` entry, as torch traces it: the placeholder stays in the
        signature (``<name>_1``, the parameter's own default) and the body uses ``value``;
        a bool/int/float/str value is checked by an assert in the graph (calling with another
        value raises AssertionError), None by ``_assert_is_none``; any other value (a tensor)
        cannot be checked: torch's warning says so."""
        ph = self.create_proxy("placeholder", f"{name}_1", default, {})
        message = f"{name} has been specialized to have value {value} but got another value"
        if type(value) in (bool, int, float, str):
            self.create_proxy("call_function", _assert, (self.create_proxy("call_function", operator.eq,
                                                                           (ph, value), {}), message), {})
        elif value is None:
            self.create_proxy("call_function", _assert_is_none, (ph, message), {})
        else:
            warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                          "function. It is up to the user to make sure that your inputs match the inputs you "
                          "specialized the function with.", stacklevel=4)

    def _op_hook(self, name, func, args, kwargs, nxt):
        if _has_proxy(args) or _has_proxy(kwargs):
            return self.create_proxy("call_function", dispatch.routed(name), args, kwargs)
        return nxt(name, func, args, kwargs)

    def _module_hook(self, module, call, args, kwargs):
        if _has_proxy(args) or _has_proxy(kwargs):
            return self.call_module(module, call, args, kwargs)
        return call(*args, **kwargs)


def _assert(condition, message: str = "") -> None:
    """``torch._assert``: AssertionError(message) unless ``condition`` (what a specialized
    ``concrete_args`` entry checks)."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value, message: str) -> None:
    """What a ``concrete_args`` entry specialized to None checks (torch's helper)."""
    if value is not None:
        raise AssertionError(message)


class GraphAppendingTracer(Tracer):
    """A tracer that only appends to an existing graph (what a bare ``Proxy(node)`` uses)."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.root = graph.owning_module


# (globals dict, name) pairs that ``wrap("name")`` registered: while a trace runs, each name
# in its module's globals is the wrapped function (torch's ``_wrapped_fns_to_patch``)
_WRAPPED_NAMES: list[tuple[dict, str]] = []


def wrap(fn_or_name):
    """``torch.fx.wrap``: a function recorded as one ``call_function`` node when it gets a
    proxy (it is not traced through), called as usual otherwise. ``fn = fx.wrap(fn)`` (or
    ``@fx.wrap``) returns the wrapped function; ``fx.wrap("name")`` at a module's top level
    (torchvision's ``torch.fx.wrap("stochastic_depth")``) registers that module's global
    ``name`` (or the builtin of that name), which each trace replaces by the wrapped function
    while it runs and puts back after, as torch's tracer does; it returns the string."""
    if isinstance(fn_or_name, str):
        caller = inspect.currentframe().f_back
        if caller is None or caller.f_code.co_name != "<module>":
            raise NotImplementedError(
                f"torch.fx.wrap({fn_or_name!r}) must be called at the top level of a module (it "
                "registers that module's global of this name); inside a function, wrap the "
                f"function object instead: {fn_or_name} = torch.fx.wrap({fn_or_name})")
        _WRAPPED_NAMES.append((caller.f_globals, fn_or_name))
        return fn_or_name
    if not callable(fn_or_name):
        raise TypeError(f"torch.fx.wrap: expected a function, got {type(fn_or_name).__name__}")
    fn = fn_or_name

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        for a in (*args, *kwargs.values()):
            proxy = _first_proxy(a)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", wrapped, args, kwargs)
        return fn(*args, **kwargs)

    return wrapped


@contextlib.contextmanager
def _wrapped_names_patched():
    """While a trace runs, every global that ``wrap("name")`` registered is its wrapped
    function (a builtin of that name when the module has no such global); put back after."""
    saved = []
    try:
        for namespace, name in _WRAPPED_NAMES:
            if name in namespace:
                saved.append((namespace, name, namespace[name]))
                namespace[name] = wrap(namespace[name])
            elif hasattr(builtins, name):
                saved.append((namespace, name, _MISSING))
                namespace[name] = wrap(getattr(builtins, name))
        yield
    finally:
        for namespace, name, value in reversed(saved):
            if value is _MISSING:
                namespace.pop(name, None)
            else:
                namespace[name] = value


_MISSING = object()


def _first_proxy(a):
    found = []
    map_aggregate(a, lambda x: found.append(x) if isinstance(x, Proxy) else None)
    return found[0] if found else None


def symbolic_trace(root, concrete_args: dict | None = None):
    """Trace ``root`` (a Module or a function) into a :class:`GraphModule` (torch's
    ``torch.fx.symbolic_trace``)."""
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
