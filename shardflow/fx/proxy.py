"""``torch.fx.Proxy``: the stand-in value a symbolic trace passes through the program.

Every operation on a proxy records a node instead of computing: operators become
``call_function`` nodes on ``operator.*`` (``x + 1`` -> ``operator.add``, reflected forms
too), attribute reads become ``getattr`` nodes (made only when the value is used; when it
is called instead, ``x.view(-1)``, one ``call_method`` node), indexing becomes
``operator.getitem``, and shardflow's registered ops called with a proxy (``torch.relu(x)``)
reach the tracer through the dispatcher's hook (``shardflow.fx.tracer``). What a symbolic
value cannot answer raises torch's errors: ``bool(proxy)`` (an ``if`` on a traced value)
and iterating one raise :class:`TraceError` ("symbolically traced variables cannot be used
as inputs to control flow"); ``len(proxy)`` raises RuntimeError naming ``fx.wrap('len')``.
``a, b = proxy`` (tuple unpacking, read from the caller's bytecode, as torch does) gives
``proxy[0]``, ``proxy[1]``. Deviation: torch records ``math.sqrt(proxy)`` (it patches the
traced code's globals); here ``float()`` / ``int()`` / ``math.*`` of a proxy raise
:class:`TraceError` saying to use the torch function or ``fx.wrap``.
"""

from __future__ import annotations

import dis
import inspect
import operator
from bisect import bisect_left

from .node import Node


class TraceError(ValueError):
    """A traced program used a symbolic value where a concrete one is needed (torch.fx's
    ``torch.fx.proxy.TraceError``)."""


_BINARY = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
           "and_", "or_", "xor", "matmul", "getitem")
_COMPARE = ("eq", "ne", "lt", "gt", "le", "ge")
_UNARY = ("neg", "pos", "invert", "abs")
_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "matmul")


class Proxy:
    """A traced value: ``node`` (what made it) and ``tracer`` (which graph it records into)."""

    def __init__(self, node: Node, tracer=None) -> None:
        if tracer is None:
            from .tracer import GraphAppendingTracer

            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str):
        if k.startswith("__") and k.endswith("__"):  # copy/pickle probes: not traced
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        instructions = list(dis.get_instructions(frame.f_code))
        i = bisect_left(instructions, frame.f_lasti, key=lambda ins: ins.offset)
        if i < len(instructions) and instructions[i].opname == "UNPACK_SEQUENCE":
            return (self[j] for j in range(instructions[i].argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __index__(self):
        raise TraceError("symbolically traced variables cannot be used as an index or a size "
                         "(a Python int is needed here); pass the value in concrete_args, or "
                         "move this code into a function wrapped with torch.fx.wrap")

    def __float__(self):
        # torch records math.* calls on proxies by patching the traced code's globals
        # (Tracer's autowrap_modules); shardflow does not patch, so say what to do instead
        raise TraceError("a symbolically traced value was converted to a Python number (float(), "
                         "int(), or a math.* function such as math.sqrt); shardflow's tracer does not "
                         "record math.* calls: use the torch function (torch.sqrt) or move the code "
                         "into a function wrapped with torch.fx.wrap")

    __int__ = __float__

    # no in-place forms: ``x += y`` records ``operator.add`` and rebinds ``x``, as torch's
    __hash__ = object.__hash__


def _binary(name):
    op = getattr(operator, name)

    def method(self, other):
        return self.tracer.create_proxy("call_function", op, (self, other), {})

    def reflected(self, other):
        return self.tracer.create_proxy("call_function", op, (other, self), {})

    return method, reflected


def _unary(name):
    op = getattr(operator, name) if name != "abs" else abs

    def method(self):
        return self.tracer.create_proxy("call_function", op, (self,), {})

    return method


for _name in _BINARY + _COMPARE:
    _dunder = _name.rstrip("_")
    _method, _reflected = _binary(_name)
    setattr(Proxy, f"__{_dunder}__", _method)
    if _name in _REFLECTABLE:
        setattr(Proxy, f"__r{_dunder}__", _reflected)
for _name in _UNARY:
    setattr(Proxy, f"__{_name}__", _unary(_name))


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node made on first use, or a ``call_method`` node when
    called (``proxy.view(-1)``)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)
