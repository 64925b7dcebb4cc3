"""``torch.fx.Interpreter`` and ``Transformer``: run a graph node by node, or rewrite it.

``Interpreter(gm).run(*args)`` walks ``gm.graph`` in order, calling ``run_node`` per node,
which calls the method named by the node's opcode (``placeholder``, ``get_attr``,
``call_function``, ``call_method``, ``call_module``, ``output``) with the node's target and
its arguments' values; a subclass overrides any of them (a profiler times ``run_node``, a
pass swaps ``call_function``). Values are dropped after their last use, as torch's.

``Transformer(gm).transform()`` runs the same walk on proxies into a new graph, so an
override returns new operations (``torch.sigmoid(args[0])`` records a node; the tracer's
hooks are installed while ``transform`` runs) and the result is a new :class:`GraphModule`
over the same root. Modules stay ``call_module`` nodes (every module is a leaf there).
"""

from __future__ import annotations

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy
from .tracer import Tracer


class Interpreter:
    """Runs a GraphModule's graph node by node (see the module docstring)."""

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict = {}
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses: dict = {}
        if garbage_collect_values:
            seen: set = set()
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True):
        """Run the graph on ``args``; returns what its output node returns."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and not getattr(e, "_fx_noted", False):
                    e.add_note(f"While executing {node.format_node()}")
                    e._fx_noted = True
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, []):
                    del self.env[dead]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list):
        """``run`` on a list it empties (torch's boxed calling convention)."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n):
        """Run one node: its opcode's method on its target and argument values."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # -- one method per opcode -----------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("**"):
            return {}
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was "
                               "not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # -- helpers -------------------------------------------------------------------------
    def fetch_attr(self, target: str):
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load_arg(n_arg):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() "
                                   "to diagnose such issues")
            return self.env[n_arg]

        return map_arg(args, load_arg)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph, root) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self._index_root()

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Rewrites a GraphModule by running it on proxies (see the module docstring)."""

    def __init__(self, module) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else _NO_DEFAULT
        if default is _NO_DEFAULT:
            node = self.new_graph.placeholder(target)
        else:
            node = self.new_graph.placeholder(target, default_value=default)
        return Proxy(node, self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The rewritten module: a new GraphModule over the same root."""
        with self.tracer.hooks_installed():
            result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy)
                                                else self.tracer.create_arg(a)))
        return GraphModule(self.module, self.new_graph)


_NO_DEFAULT = object()
