"""``fuse_modules(model, [["conv1", "relu1"], ...])`` (``torch.ao.quantization.fuse_modules``).

Patterns (types of the listed modules, in order):

* ``Conv2d, ReLU`` -> ``ConvReLU2d``; ``Linear, ReLU`` -> ``LinearReLU``;
* ``Conv2d, BatchNorm2d`` -> ``Conv2d`` with the batch norm folded in (eval mode only):
  ``w' = w * g / sqrt(var + eps)`` per output channel, ``b' = (b - mean) * g / sqrt(var + eps)
  + beta``; ``Conv2d, BatchNorm2d, ReLU`` -> ``ConvReLU2d`` of that folded conv.

The first listed module is replaced by the fused one, the others by ``nn.Identity`` (so the
model's ``forward`` runs unchanged). Names are dotted paths from ``model``.
"""

from __future__ import annotations

import copy

import numpy as np

from .. import nn
from ..autograd.tensor import _wrap
from ..nn.parameter import Parameter
from .modules.intrinsic import ConvReLU2d, LinearReLU

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_conv_bn_eval"]


def fuse_conv_bn_eval(conv, bn):
    """A copy of ``conv`` with the eval-mode ``bn`` folded into its weight and bias."""
    if conv.training or bn.training:
        raise ValueError(
            "fuse_modules: folding BatchNorm2d into Conv2d needs eval mode (it uses the running "
            "statistics); call model.eval() first (QAT with batch norm folding is not built)"
        )
    fused = copy.deepcopy(conv)
    inv = bn.weight.array / np.sqrt(bn.running_var.array + bn.eps) if bn.affine else \
        1.0 / np.sqrt(bn.running_var.array + bn.eps)  # (O,)
    w = conv.weight.array * inv.reshape(-1, 1, 1, 1).astype(conv.weight.array.dtype)
    b = conv.bias.array if conv.bias is not None else np.zeros_like(bn.running_mean.array)
    b = (b - bn.running_mean.array) * inv + (bn.bias.array if bn.affine else 0.0)
    fused.weight = Parameter(_wrap(w.astype(conv.weight.array.dtype)))
    fused.bias = Parameter(_wrap(b.astype(conv.weight.array.dtype)))
    return fused


def _fuse(mods, is_qat=False):
    types = tuple(type(m) for m in mods)
    if is_qat and nn.BatchNorm2d in types:
        raise NotImplementedError(
            f"fuse_modules_qat: QAT fusion of {', '.join(t.__name__ for t in types)} (torch's "
            "nn.intrinsic.ConvBn2d / ConvBnReLU2d, which keep the batch norm and fold it while "
            "training) is not built in shardflow; fold the batch norm first (model.eval(), "
            "fuse_modules, then model.train() and prepare_qat), or keep the modules apart")
    if types == (nn.Conv2d, nn.ReLU):
        return ConvReLU2d(mods[0], mods[1])
    if types == (nn.Linear, nn.ReLU):
        return LinearReLU(mods[0], mods[1])
    if types == (nn.Conv2d, nn.BatchNorm2d):
        return fuse_conv_bn_eval(mods[0], mods[1])
    if types == (nn.Conv2d, nn.BatchNorm2d, nn.ReLU):
        return ConvReLU2d(fuse_conv_bn_eval(mods[0], mods[1]), mods[2])
    raise NotImplementedError(
        f"fuse_modules: cannot fuse {', '.join(t.__name__ for t in types)}; supported: "
        "Conv2d+ReLU, Linear+ReLU, Conv2d+BatchNorm2d[+ReLU]"
    )


def _set(model, name, module):
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def fuse_modules(model, modules_to_fuse, inplace: bool = False, fuser_func=None,
                 fuse_custom_config_dict=None):
    """Fuse each list of module names in ``modules_to_fuse`` (or one list of names)."""
    return _fuse_modules(model, modules_to_fuse, inplace, fuser_func, is_qat=False)


def fuse_modules_qat(model, modules_to_fuse, inplace: bool = False, fuser_func=None,
                     fuse_custom_config_dict=None):
    """``fuse_modules`` for quantization-aware training (torch's ``is_qat=True``):
    Conv2d+ReLU and Linear+ReLU as ``fuse_modules``; patterns with a batch norm raise
    NotImplementedError (torch's ``ConvBn2d`` / ``ConvBnReLU2d`` QAT modules are not built)."""
    return _fuse_modules(model, modules_to_fuse, inplace, fuser_func, is_qat=True)


def _fuse_modules(model, modules_to_fuse, inplace, fuser_func, is_qat):
    if not inplace:
        model = copy.deepcopy(model)
    groups = [modules_to_fuse] if modules_to_fuse and isinstance(modules_to_fuse[0], str) else modules_to_fuse
    for names in groups:
        mods = [model.get_submodule(n) for n in names]
        fused = fuser_func(mods) if fuser_func is not None else _fuse(mods, is_qat)
        qconfig = getattr(mods[0], "qconfig", None)
        if qconfig is not None:
            fused.qconfig = qconfig
        _set(model, names[0], fused)
        for n in names[1:]:
            _set(model, n, nn.Identity())
    return model
