"""``torch.fx.experimental.optimization``: ``fuse`` and its helpers, as torch's.

``fuse(model, inplace=False, no_trace=False)`` symbolically traces ``model`` (a copy unless
``inplace``) and folds every batch norm that directly follows a ``Conv1d/2d/3d`` or a
``Linear`` (whose output feeds nothing else, and whose statistics are tracked) into that
layer's weight and bias (``nn.utils.fuse_conv_bn_eval`` / ``fuse_linear_bn_eval``: eval-mode
arithmetic, so the model must be in eval mode, as torch asserts), then returns the new
``GraphModule`` without the batch-norm calls. The performance-tuning guide uses it before
tracing a model under CPU autocast. torch's MKL-DNN helpers of the same module
(``optimize_for_inference`` with its MKL layouts, ``gen_mkl_autotuner``, ...) are not built.
"""

from __future__ import annotations

import copy

from ...nn import modules as nn
from ...nn.utils import fuse_conv_bn_eval, fuse_linear_bn_eval
from ..graph_module import GraphModule
from ..tracer import symbolic_trace

__all__ = ["fuse", "matches_module_pattern", "replace_node_module"]

_PATTERNS = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d), (nn.Conv3d, nn.BatchNorm3d),
             (nn.Linear, nn.BatchNorm1d)]


def _parent_name(target: str):
    *parent, name = target.rsplit(".", 1)
    return (parent[0] if parent else ""), name


def matches_module_pattern(pattern, node, modules) -> bool:
    """Whether ``node`` calls a module of type ``pattern[-1]`` on the output of a module of type
    ``pattern[0]`` (the pattern read from its last entry backwards, as torch's)."""
    if len(node.args) == 0:
        return False
    nodes = (node.args[0], node)
    for expected_type, current_node in zip(pattern, nodes, strict=False):
        if not hasattr(current_node, "op") or current_node.op != "call_module":
            return False
        if not isinstance(current_node.target, str) or current_node.target not in modules:
            return False
        if type(modules[current_node.target]) is not expected_type:
            return False
    return True


def replace_node_module(node, modules: dict, new_module) -> None:
    """Put ``new_module`` where ``node``'s target module was (in its parent and in ``modules``)."""
    assert isinstance(node.target, str)
    parent_name, name = _parent_name(node.target)
    modules[node.target] = new_module
    setattr(modules[parent_name], name, new_module)


def fuse(model, inplace: bool = False, no_trace: bool = False):
    """Fold batch norms into the convolutions / linears before them (module docstring)."""
    if not inplace:
        model = copy.deepcopy(model)
    if not no_trace or not isinstance(model, GraphModule):
        fx_model = symbolic_trace(model)
    else:
        fx_model = model
    modules = dict(fx_model.named_modules())
    new_graph = copy.deepcopy(fx_model.graph)
    for pattern in _PATTERNS:
        for node in new_graph.nodes:
            if matches_module_pattern(pattern, node, modules):
                if len(node.args[0].users) > 1:  # the layer's output is used by something else too
                    continue
                first_layer, bn = modules[node.args[0].target], modules[node.target]
                if not bn.track_running_stats:
                    continue
                if pattern[0] in (nn.Conv1d, nn.Conv2d, nn.Conv3d):
                    fused = fuse_conv_bn_eval(first_layer, bn)
                else:
                    fused = fuse_linear_bn_eval(first_layer, bn)
                replace_node_module(node.args[0], modules, fused)
                node.replace_all_uses_with(node.args[0])
                new_graph.erase_node(node)
    return GraphModule(fx_model, new_graph)
