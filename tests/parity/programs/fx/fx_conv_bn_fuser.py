# ruff: noqa: I001, E402, E211, E203, E275, F401, UP006, UP035  (the tutorial's own style and imports, kept)
# pytorch/tutorials intermediate_source/fx_conv_bn_fuser.py at commit
# 0fc6fb6b7073d29b83b3313d90733818aa291fd5 (BSD-3-Clause), "(beta) Building a Convolution/Batch
# Norm fuser in FX" by Horace He: a model of convolutions and batch norms (some inside a
# Sequential, one wrapped in another Module) traced with ``torch.fx.symbolic_trace``; the fusion
# pass walks ``fx_model.graph.nodes``, matches ``call_module`` BatchNorm2d after Conv2d through
# ``named_modules()`` / ``node.args[0].target`` / ``node.users``, swaps the fused conv in,
# ``replace_all_uses_with``, ``graph.erase_node``, ``graph.lint()`` and ``recompile()``; the
# fused model's ``code`` is printed and its output checked with ``torch.testing.assert_allclose``;
# then ResNet18 fused, timed and ``torch.jit.script``-ed. Changes, and only these: torchvision's
# resnet18 is the stand-in of ``_standins.py`` (torchvision's layout at 1/16 width, seeded
# weights); its input of 10 x 3 x 224 x 224 became 2 x 3 x 32 x 32 and the benchmark's 10
# warm-up and 20 timed calls became 1 and 2; the tutorial's long comment blocks are shortened.
"""
(beta) Building a Convolution/Batch Norm fuser in FX
*******************************************************
**Author**: `Horace He <https://github.com/chillee>`_

Find patterns of conv/batch norm in the data dependencies, and fold the batch norm statistics
into the convolution weights (inference mode only).
"""

from typing import Type, Dict, Any, Tuple, Iterable
import copy
import torch.fx as fx
import torch
import torch.nn as nn

######################################################################
# A model of convolutions and batch norms, some hidden within Sequentials and one
# ``BatchNorm`` wrapped in another Module.

class WrappedBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mod = nn.BatchNorm2d(1)
    def forward(self, x):
        return self.mod(x)

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 1, 1)
        self.bn1 = nn.BatchNorm2d(1)
        self.conv2 = nn.Conv2d(1, 1, 1)
        self.nested = nn.Sequential(
            nn.BatchNorm2d(1),
            nn.Conv2d(1, 1, 1),
        )
        self.wrapped = WrappedBatchNorm()

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.conv2(x)
        x = self.nested(x)
        x = self.wrapped(x)
        return x

model = M()

model.eval()

######################################################################
# Symbolically trace the model: the modules within the Sequential and the wrapped Module
# are inlined into the graph.

traced_model = torch.fx.symbolic_trace(model)
print(traced_model.graph)

####################################
# Fusing Convolution with Batch Norm (code copied from torch/nn/utils/fusion.py)
def fuse_conv_bn_eval(conv, bn):
    """
    Given a conv Module `A` and an batch_norm module `B`, returns a conv
    module `C` such that C(x) == B(A(x)) in inference mode.
    """
    assert(not (conv.training or bn.training)), "Fusion only for eval!"
    fused_conv = copy.deepcopy(conv)

    fused_conv.weight, fused_conv.bias = \
        fuse_conv_bn_weights(fused_conv.weight, fused_conv.bias,
                             bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)

    return fused_conv

def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    if conv_b is None:
        conv_b = torch.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = torch.ones_like(bn_rm)
    if bn_b is None:
        bn_b = torch.zeros_like(bn_rm)
    bn_var_rsqrt = torch.rsqrt(bn_rv + bn_eps)

    conv_w = conv_w * (bn_w * bn_var_rsqrt).reshape([-1] + [1] * (len(conv_w.shape) - 1))
    conv_b = (conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b

    return torch.nn.Parameter(conv_w), torch.nn.Parameter(conv_b)


####################################
# FX Fusion Pass

def _parent_name(target : str) -> Tuple[str, str]:
    """
    Splits a ``qualname`` into parent path and last atom.
    For example, `foo.bar.baz` -> (`foo.bar`, `baz`)
    """
    *parent, name = target.rsplit('.', 1)
    return parent[0] if parent else '', name

def replace_node_module(node: fx.Node, modules: Dict[str, Any], new_module: torch.nn.Module):
    assert(isinstance(node.target, str))
    parent_name, name = _parent_name(node.target)
    setattr(modules[parent_name], name, new_module)


def fuse(model: torch.nn.Module) -> torch.nn.Module:
    model, state_dict = type(model)(), model.state_dict()
    model.load_state_dict(state_dict)
    model.eval()
    fx_model: fx.GraphModule = fx.symbolic_trace(model)
    modules = dict(fx_model.named_modules())

    for node in fx_model.graph.nodes:
        if node.op != 'call_module': # If our current node isn't calling a Module then we can ignore it.
            continue
        if type(modules[node.target]) is nn.BatchNorm2d and type(modules[node.args[0].target]) is nn.Conv2d:
            if len(node.args[0].users) > 1:  # Output of conv is used by other nodes
                continue
            conv = modules[node.args[0].target]
            bn = modules[node.target]
            fused_conv = fuse_conv_bn_eval(conv, bn)
            replace_node_module(node.args[0], modules, fused_conv)
            node.replace_all_uses_with(node.args[0])
            fx_model.graph.erase_node(node)
    fx_model.graph.lint()
    fx_model.recompile()
    return fx_model


######################################################################
# Testing out our Fusion Pass

fused_model = fuse(model)
print(fused_model.code)
inp = torch.randn(5, 1, 1, 1)
torch.testing.assert_allclose(fused_model(inp), model(inp))


######################################################################
# Benchmarking our Fusion on ResNet18
import torchvision.models as models
import time

rn18 = models.resnet18()
rn18.eval()

inp = torch.randn(2, 3, 32, 32)
output = rn18(inp)

def benchmark(model, iters=2):
    for _ in range(1):
        model(inp)
    begin = time.time()
    for _ in range(iters):
        model(inp)
    return str(time.time()-begin)

fused_rn18 = fuse(rn18)
print("Unfused time: ", benchmark(rn18))
print("Fused time: ", benchmark(fused_rn18))
######################################################################
# The output of our FX transformation is ("torchscriptable") PyTorch code.
jit_rn18 = torch.jit.script(fused_rn18)
print("jit time: ", benchmark(jit_rn18))
