"""``torch.nn.utils.fusion``: fold an eval-mode BatchNorm into the conv or linear layer
before it (PyTorch's formulas).

With ``s = bn_w / sqrt(running_var + eps)`` per output channel::

    conv:   W' = W * s (over dim 0, or dim 1 with ``transpose``);  b' = (b - running_mean) * s + bn_b
    linear: W' = W * s[:, None];                                    b' = (b - running_mean) * s + bn_b

so that ``bn(layer(x)) == fused(x)`` in eval mode. Missing ``b``/``bn_w``/``bn_b`` count as
0/1/0. The results are new Parameters (the input layer is deep-copied, not changed).
"""

from __future__ import annotations

import copy

from ...autograd import no_grad
from ..parameter import Parameter


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` with ``bn`` (eval mode, with running stats) folded in."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval! Call conv.eval() and bn.eval() first")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None "
                             "(build the BatchNorm with track_running_stats=True)")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The folded ``(weight, bias)`` Parameters of a conv followed by a BatchNorm."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    with no_grad():
        b = conv_b if conv_b is not None else bn_rm.new_zeros(bn_rm.shape)
        gamma = bn_w if bn_w is not None else bn_rm.new_ones(bn_rm.shape)
        beta = bn_b if bn_b is not None else bn_rm.new_zeros(bn_rm.shape)
        rsqrt = (bn_rv + bn_eps).rsqrt()
        shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
        fused_w = (conv_w * (gamma * rsqrt).reshape(shape)).to(w_dtype)
        fused_b = ((b - bn_rm) * rsqrt * gamma + beta).to(b_dtype)
    return (Parameter(fused_w, conv_w.requires_grad),
            Parameter(fused_b, conv_b.requires_grad if conv_b is not None else False))


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` with ``bn`` (eval mode; ``num_features`` equal to
    ``out_features``, or 1) folded in."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval! Call linear.eval() and bn.eval() first")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None "
                             "(build the BatchNorm with track_running_stats=True)")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The folded ``(weight, bias)`` Parameters of a linear layer followed by a BatchNorm."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    with no_grad():
        b = linear_b if linear_b is not None else bn_rm.new_zeros(bn_rm.shape)
        scale = bn_w * (bn_rv + bn_eps).rsqrt()
        fused_w = linear_w * scale.unsqueeze(-1).to(w_dtype)
        fused_b = ((b - bn_rm) * scale + bn_b).to(b_dtype)
    return (Parameter(fused_w, linear_w.requires_grad),
            Parameter(fused_b, linear_b.requires_grad if linear_b is not None else False))


__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]
