"""``torch.fx.GraphModule``: a Module whose ``forward`` is Python generated from a Graph.

``GraphModule(root, graph, class_name)`` copies from ``root`` (a Module, or a dict
``{qualified name: module or tensor}``) exactly what the graph's ``call_module`` and
``get_attr`` nodes name, at the same dotted paths (missing parents become empty Modules;
plain tensors become buffers, as torch's), so ``state_dict()`` / ``parameters()`` are those
of the root's used parts. ``recompile()`` regenerates ``forward`` from ``graph`` (after a
pass edited it) — each GraphModule has a class of its own, named ``class_name``, that holds
that ``forward``, as torch's. ``code`` is the source, ``print_readable()`` prints it as a
class; the source is registered with ``linecache`` so tracebacks through it show lines.
Pickling (and ``torch.save`` of the whole module) stores the attributes and the graph and
regenerates ``forward`` on load.
"""

from __future__ import annotations

import copy
import itertools
import linecache

from ..autograd.tensor import Tensor
from ..nn.module import Module
from ..nn.parameter import Parameter
from .graph import Graph

_KEYS = itertools.count()


def _copy_attr(from_module, to_module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # already copied
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    _assign(to_module, field, getattr(from_module, field))


def _assign(to_module, field: str, value) -> None:
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


def _assign_path(to_module, target: str, value) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    _assign(to_module, field, value)


class GraphModule(Module):
    """A Module running a Graph (see the module docstring)."""

    def __new__(cls, *args, **kwargs):
        # a class per instance: forward is set on it by recompile()
        for base in cls.__mro__:
            if base.__name__ == "GraphModuleImpl":
                break
        else:
            cls = type("GraphModuleImpl", (cls,), {})
        return super().__new__(cls)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target "
                                           "was not provided in ``root``!")
                    _assign_path(self, node.target, root[node.target])
        else:
            raise RuntimeError(f"GraphModule: root must be an nn.Module or a dict, got {type(root).__name__}")
        self.meta: dict = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be an fx.Graph, got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward`` (torch's ``GraphModule.code``)."""
        return self._code

    def recompile(self):
        """Regenerate ``forward`` from ``graph``; returns the ``python_code`` result."""
        python_code = self._graph.python_code(root_module="self")
        src = python_code.src
        self.__dict__["_code"] = src
        key = f"<eval_with_key>.{next(_KEYS)}"
        linecache.cache[key] = (len(src), None, src.splitlines(True), key)
        namespace = dict(python_code.globals)
        exec(compile(src, key, "exec"), namespace)
        type(self).forward = namespace["forward"]
        return python_code

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target`` (making empty parents); False when a
        parent on the way is not a Module."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False when there is none."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule no ``call_module`` / ``get_attr`` node uses (nor is inside
        or above one that is)."""
        used: set[str] = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
                if node.op == "call_module":
                    sub = self.get_submodule(node.target)
                    used.update(f"{node.target}.{name}" for name, _ in sub.named_modules() if name)
        for name, _ in reversed(list(self.named_modules())):
            if name and name not in used:
                self.delete_submodule(name)

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class with its generated forward (torch's layout)."""
        if include_stride or include_device or colored:
            raise NotImplementedError("GraphModule.print_readable: include_stride, include_device and "
                                      "colored are not supported; call print_readable() without them")
        body = self._code.strip("\n").split("\n")
        lines = [f"class {type(self).__name__}(torch.nn.Module):"]
        lines.append("    " + body[0])
        lines.append("        # No stacktrace found for following nodes")
        lines.extend("    " + line for line in body[1:] if line.strip())
        text = "\n".join(lines) + "\n"
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        # torch's: ``print(gm)`` shows the module tree and the generated code; ``repr(gm)``
        # (and a GraphModule printed as a child of another module) the module tree only
        return "\n".join([super().__repr__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def __reduce__(self):
        # the class is made per instance (__new__), so pickle rebuilds it: state, graph, name
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild, (state, self._graph, type(self).__name__))

    def __deepcopy__(self, memo):
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        GraphModule.__init__(res, fake, fake.__dict__["_graph"], type(self).__name__)
        return res

    def __copy__(self):
        return GraphModule(self, self._graph, type(self).__name__)


def _rebuild(state: dict, graph: Graph, class_name: str) -> GraphModule:
    """Unpickle a GraphModule: its attributes as they were, forward regenerated."""
    gm = GraphModule.__new__(GraphModule)
    gm.__dict__.update(state)
    type(gm).__name__ = type(gm).__qualname__ = class_name
    gm.graph = graph
    return gm
