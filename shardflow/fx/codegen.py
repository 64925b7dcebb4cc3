"""Python source for a graph: the ``forward`` a :class:`GraphModule` runs and ``.code`` shows.

The text is torch.fx's: one line per node (``relu = self.relu(linear)``), operators as
operators (``add = relu + 1``, ``getitem = x[0]``, ``getattr_1 = x.shape``), every value
dropped after its last use (``;  linear = None``, so the forward frees intermediates as it
goes, as torch's does), functions by their public name (``torch.relu(add)``, with ``torch``
bound to shardflow in the code's globals) and keyword arguments as ``dim = 1``.
Functions that have no public name (a user's ``fx.wrap``-ed function) are bound in the
globals under their own name.
"""

from __future__ import annotations

import builtins
import math
import operator
import re
import sys

from .node import Node, qualified_name, type_repr

# torch.fx's operator spellings (operator.<name> -> source)
MAGIC = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}", "eq": "{} == {}",
    "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "neg": "-{}", "pos": "+{}", "invert": "~{}",
}


def format_target(base: str, target: str) -> str:
    """``self.nested[0]`` spelt as torch does: ``getattr(self.nested, "0")``."""
    out = base
    for atom in target.split("."):
        out = f"{out}.{atom}" if atom.isidentifier() else f'getattr({out}, "{atom}")'
    return out


class _Globals:
    """The names the generated code needs, and their values."""

    def __init__(self, taken=frozenset()) -> None:
        self.taken = taken
        # ``torch`` in the generated code is the package the program imported (loaded before
        # any of its subpackages, so read, not imported: lower layers never import the root)
        shardflow = sys.modules[__name__.split(".")[0]]
        self.values = {"torch": shardflow, "operator": operator, "builtins": builtins,
                       "device": shardflow.device, "inf": math.inf, "nan": math.nan}

    def name_for(self, func) -> str:
        if getattr(operator, getattr(func, "__name__", ""), None) is func:
            return f"operator.{func.__name__}"
        q = qualified_name(func)
        if q.startswith(("torch.", "builtins.")):
            if q.startswith("builtins."):
                return q[len("builtins."):]
            return q
        # torch's spelling: the qualified name made an identifier (``mymodule_my_func``),
        # never one of the graph's value names
        base = re.sub("[^0-9a-zA-Z_]+", "_", f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', 'fn')}")
        base = base if base[:1].isalpha() or base[:1] == "_" else f"_{base}"
        name, i = base, 0
        while (name in self.values and self.values[name] is not func) or name in self.taken:
            i += 1
            name = f"{base}_{i}"
        self.values[name] = func
        return name


def repr_arg(a) -> str:
    """An argument as source: nodes by name, containers element by element, dtypes as
    ``torch.float32``."""
    if isinstance(a, Node):
        return a.name
    if isinstance(a, tuple):
        if hasattr(a, "_fields"):
            return f"{type(a).__name__}({', '.join(repr_arg(x) for x in a)})"
        inner = ", ".join(repr_arg(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(repr_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {repr_arg(v)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({repr_arg(a.start)}, {repr_arg(a.stop)}, {repr_arg(a.step)})"
    if isinstance(a, float) and (math.isinf(a) or math.isnan(a)):
        return repr(a) if not math.isinf(a) else ("inf" if a > 0 else "-inf")
    text = repr(a)
    if text.startswith("shardflow."):  # dtypes, Size: torch's spelling, torch bound to shardflow
        return "torch." + text[len("shardflow."):]
    return text


def _format_args(args, kwargs) -> str:
    parts = [repr_arg(a) for a in args] + [f"{k} = {repr_arg(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def python_code(graph, root_module: str = "self"):
    """``(source, globals)`` of ``def forward(self, ...)`` for ``graph`` (module docstring)."""
    nodes = list(graph.nodes)
    g = _Globals({n.name for n in nodes})
    last_use: dict = {}
    user_to_last_uses: dict = {}
    for node in reversed(nodes):
        for inp in node.all_input_nodes:
            if inp not in last_use:
                last_use[inp] = node
                user_to_last_uses.setdefault(node, []).append(inp)

    free_vars: list[str] = []
    returns = None
    body: list[str] = []
    for node in nodes:
        if node.op == "placeholder":
            target = node.target
            default = f" = {repr_arg(node.args[0])}" if node.args else ""
            annotation = type_repr(node.type)
            free_vars.append(f"{target}{f' : {annotation}' if annotation else ''}{default}")
            raw = target.lstrip("*")
            if raw != node.name:
                body.append(f"{node.name} = {raw}\n")
            continue
        if node.op == "output":
            body.append(f"return {repr_arg(node.args[0])}\n")
            returns = type_repr(node.type)
            continue
        body.append(_emit(node, g, root_module))
        dead = list(user_to_last_uses.get(node, []))
        if not node.users:
            dead.append(node)
        body.append(f";  {' = '.join([n.name for n in dead] + ['None'])}\n" if dead else "\n")
    if not any(n.op == "output" for n in nodes):
        body.append("pass\n")
    lines = "".join(body).split("\n")
    code = "\n".join("    " + line for line in lines)
    signature = ", ".join([root_module, *free_vars])
    arrow = f" -> {returns}" if returns else ""
    return f"\n\n\ndef forward({signature}){arrow}:\n{code}", g.values


def _emit(node, g: _Globals, root: str) -> str:
    if node.op == "get_attr":
        return f"{node.name} = {format_target(root, node.target)}"
    if node.op == "call_module":
        return f"{node.name} = {format_target(root, node.target)}({_format_args(node.args, node.kwargs)})"
    if node.op == "call_method":
        this, *rest = node.args
        return f"{node.name} = {repr_arg(this)}.{node.target}({_format_args(rest, node.kwargs)})"
    target = node.target
    name = getattr(target, "__name__", "")
    if getattr(operator, name, None) is target and name in MAGIC and not node.kwargs:
        return f"{node.name} = {MAGIC[name].format(*(repr_arg(a) for a in node.args))}"
    if (target is getattr and len(node.args) == 2 and not node.kwargs
            and isinstance(node.args[1], str) and node.args[1].isidentifier()):
        return f"{node.name} = {repr_arg(node.args[0])}.{node.args[1]}"
    return f"{node.name} = {g.name_for(target)}({_format_args(node.args, node.kwargs)})"
