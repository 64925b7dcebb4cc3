"""``torch.fx.Graph``: the ordered list of :class:`Node` s a trace records.

Built by the tracer (or by hand: ``placeholder``, ``get_attr``, ``call_function``,
``call_method``, ``call_module``, ``output``), edited by passes (``inserting_before`` /
``inserting_after``, ``erase_node``, ``node.replace_all_uses_with``,
``eliminate_dead_code``), checked by ``lint()`` and turned into source by
``python_code`` (``codegen.py``). ``print(graph)`` and ``print_tabular()`` write torch's
formats; ``print_tabular`` formats its table itself (torch needs the ``tabulate`` package for
it; the layout is tabulate's default one).
"""

from __future__ import annotations

import contextlib
import inspect
import types
from collections.abc import Callable, Iterator

from ._namespace import Namespace, snake_case
from .codegen import python_code
from .node import Node, map_aggregate, map_arg


class _NodeList:
    """A live view of a graph's nodes (``len``, iteration, ``reversed``), as torch's."""

    def __init__(self, graph, direction: str = "_next") -> None:
        self._graph = graph
        self._direction = direction

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        cur = getattr(root, self._direction)
        while cur is not root:
            nxt = getattr(cur, self._direction)  # read first: the loop body may erase cur
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, "_prev" if self._direction == "_next" else "_next"))


class Graph:
    """A graph of nodes (see the module docstring); ``owning_module`` is the GraphModule (or
    root module) its ``get_attr`` / ``call_module`` targets name."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = Namespace()
        self._insert = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def find_nodes(self, *, op: str, target=None) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- building -------------------------------------------------------------------------
    def create_node(self, op: str, target, args=None, kwargs=None, name: str | None = None,
                    type_expr=None) -> Node:
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        for n in map_arg_nodes((args, kwargs)):
            if n.graph is not self:
                raise RuntimeError(f"Graph.create_node: argument node {n.name!r} belongs to another graph; "
                                   "copy it into this graph first (Graph.node_copy / graph_copy)")
        candidate = name if name is not None else self._target_to_str(target)
        node = Node(self, self._namespace.create_name(candidate), op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    @staticmethod
    def _target_to_str(target) -> str:
        if isinstance(target, str):
            name = target
        else:
            name = getattr(target, "__name__", None) or type(target).__name__
        if name.startswith("__") and name.endswith("__") and len(name) > 4:
            name = name[2:-2]  # a magic method: __add__ -> add
        return snake_case(name.replace(".", "_"))

    def placeholder(self, name: str, type_expr=None, default_value=inspect.Signature.empty) -> Node:
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None) -> Node:
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable = lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) in this one, its node arguments mapped by
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy ``g``'s nodes (but its output) into this graph; ``val_map`` maps ``g``'s nodes
        to the copies (filled in). Returns the value ``g``'s output returns, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None) -> Graph:
        """A copy node by node (iterative: a long graph does not recurse deeply)."""
        g = Graph(tracer_cls=self._tracer_cls)
        val_map: dict = {}
        copied = g.graph_copy(self, val_map, return_output_node=True)
        if copied is not None:
            rv, old_output = copied
            g.output(rv, type_expr=old_output.type).meta = dict(old_output.meta)
        return g

    def __getstate__(self) -> dict:
        """Pickled as a flat list of node records (no recursion through the linked list)."""
        index = {n: i for i, n in enumerate(self.nodes)}
        records = [(n.name, n.op, n.target, map_arg(n.args, lambda a: _NodeRef(index[a])),
                    map_arg(n.kwargs, lambda a: _NodeRef(index[a])), n.type, n.meta) for n in self.nodes]
        return {"records": records, "tracer_cls": self._tracer_cls}

    def __setstate__(self, state: dict) -> None:
        self.__init__(tracer_cls=state["tracer_cls"])
        made: list[Node] = []

        def resolve(a):
            return map_aggregate(a, lambda x: made[x.index] if isinstance(x, _NodeRef) else x)

        for name, op, target, args, kwargs, type_expr, meta in state["records"]:
            node = self.create_node(op, target, resolve(args), resolve(kwargs), name, type_expr)
            node.meta = meta
            made.append(node)

    def erase_node(self, to_erase: Node) -> None:
        """Take ``to_erase`` out of the graph; it must have no users left."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})  # its inputs lose it as a user
        self._namespace.release(to_erase.name)

    @contextlib.contextmanager
    def inserting_before(self, n: Node | None = None):
        """New nodes go before ``n`` (None: at the start) while the block runs."""
        saved = self._insert
        self._insert = (n if n is not None else self._root._next).prepend
        try:
            yield
        finally:
            self._insert = saved

    @contextlib.contextmanager
    def inserting_after(self, n: Node | None = None):
        """New nodes go right after ``n`` (None: at the end), each after the last, while
        the block runs."""
        saved = self._insert
        anchor = n if n is not None else self._root._prev
        self._insert = anchor._next.prepend
        try:
            yield
        finally:
            self._insert = saved

    # -- passes --------------------------------------------------------------------------
    def eliminate_dead_code(self, is_impure_node: Callable | None = None) -> bool:
        """Erase the nodes nothing uses (but impure ones: ``Node.is_impure``), last to first.
        Returns whether anything changed."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants, raising RuntimeError naming the node that breaks one:
        each node's graph is this one, names are unique, every argument is defined earlier,
        ``users`` agree with the arguments, at most one output and it is last, and
        ``get_attr`` / ``call_module`` targets exist on the owning module."""
        seen: set = set()
        names: set = set()
        output_seen = False
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            if output_seen:
                raise RuntimeError(f"Node '{node}' comes after the graph's output node")
            for arg in node.all_input_nodes:
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been "
                                       "defined! Please check that Nodes in the graph are topologically ordered")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' uses '{arg}' but is not among its users")
            seen.add(node)
            names.add(node.name)
            output_seen = output_seen or node.op == "output"
        module = self.owning_module
        if module is None:
            return
        for node in self.nodes:
            if node.op in ("get_attr", "call_module"):
                obj = module
                for i, atom in enumerate(node.target.split(".")):
                    if not hasattr(obj, atom):
                        raise RuntimeError(f"Node {node.name} target {node.target} references nonexistent "
                                           f"attribute {atom} of {'.'.join(node.target.split('.')[:i]) or 'root'}")
                    obj = getattr(obj, atom)

    # -- printing ------------------------------------------------------------------------
    def python_code(self, root_module: str = "self"):
        """torch's ``PythonCode``-like result: ``.src`` and ``.globals``."""
        src, glb = python_code(self, root_module)
        return types.SimpleNamespace(src=src, globals=glb, _lineno_map=None)

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        lines = []
        for node in self.nodes:
            s = node.format_node()
            if s is not None:
                lines.append("    " + s)
        del placeholder_names
        return "graph():\n" + "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as torch's table (opcode, name, target, args, kwargs)."""
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        print(tabulate(rows, ["opcode", "name", "target", "args", "kwargs"]))


def tabulate(rows, headers) -> str:
    """tabulate's default ("simple") layout for string cells: each column as wide as its
    widest cell or its header plus 2, left-aligned, two spaces between columns, a dashed
    rule under the headers, trailing spaces dropped."""
    widths = [max([len(h) + 2, *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def map_arg_nodes(a) -> list[Node]:
    found: list[Node] = []
    map_arg(a, found.append)
    return found


class _NodeRef:
    """A node argument in a pickled graph: the index of the node it names."""

    def __init__(self, index: int) -> None:
        self.index = index
