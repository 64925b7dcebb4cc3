"""``torch.fx``: symbolic tracing of modules into graphs, and running and rewriting them.

Built, with torch's names and formats (details in each module and docs/COMPAT.md, "torch.fx"):

* ``symbolic_trace(module_or_fn, concrete_args=None)`` and ``Tracer`` (``tracer.py``):
  the program runs on :class:`Proxy` values; leaf modules (shardflow's ``nn`` layers) become
  ``call_module`` nodes, registered ops ``call_function`` nodes, Tensor methods
  ``call_method`` nodes, parameters ``get_attr`` nodes; control flow on a traced value
  raises :class:`~shardflow.fx.proxy.TraceError`;
* ``Graph`` / ``Node`` (``graph.py``, ``node.py``): editing (``inserting_before``,
  ``erase_node``, ``replace_all_uses_with``), ``lint``, ``eliminate_dead_code``,
  ``print_tabular``, ``map_arg``;
* ``GraphModule`` (``graph_module.py``): ``forward`` generated as Python (``code``,
  ``recompile``, ``print_readable``), node names and code as torch writes them;
* ``Interpreter`` / ``Transformer`` (``interpreter.py``): run or rewrite a graph node by node;
* ``replace_pattern`` (``subgraph_rewriter.py``), ``wrap`` (as a decorator or call on a
  function), ``passes.shape_prop.ShapeProp``.

The tracer reaches op calls and module calls through hooks that ``autograd.dispatch`` and
``nn.Module`` expose and that are empty outside a trace, so eager code pays nothing for it.
"""

from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern
from .tracer import Tracer, symbolic_trace, wrap

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Proxy", "Tracer", "Transformer",
           "map_arg", "replace_pattern", "symbolic_trace", "wrap"]
