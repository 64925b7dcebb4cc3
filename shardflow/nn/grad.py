"""``torch.nn.grad``: the gradients of a convolution with respect to its input
(``conv{1,2,3}d_input(input_size, weight, grad_output, ...)``) and to its weight
(``conv{1,2,3}d_weight(input, weight_size, grad_output, ...)``), computed without running the
forward a program already ran (custom autograd Functions around a convolution use them).

torch calls its ``convolution_backward`` kernel; shardflow differentiates the convolution op
(``autograd.grad``; a convolution is linear in each argument, so the stand-in for the missing
argument does not change the result) and keeps the graph when the arguments require grad, so
the result is differentiable as torch's is.
"""

from __future__ import annotations

from .. import autograd
from ..autograd import Tensor
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _size(size, name) -> tuple:
    if isinstance(size, Tensor) or not isinstance(size, tuple | list) or not all(isinstance(s, int) for s in size):
        raise TypeError(f"{name} must be a shape (a torch.Size, tuple or list of ints), got {size!r}")
    return tuple(size)


def _grad_of(conv, stand_in, fixed, grad_output, which, **kw):
    """The gradient of ``conv`` at ``stand_in`` (input or weight, zeros of the asked shape)."""
    create = autograd.is_grad_enabled() and (fixed.requires_grad or grad_output.requires_grad)
    with autograd.enable_grad():  # also inside no_grad and a custom Function's backward, as torch's
        x = stand_in.requires_grad_()
        out = conv(x, fixed, **kw) if which == "input" else conv(fixed, x, **kw)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"grad_output has shape {tuple(grad_output.shape)} but the convolution of these "
                               f"sizes gives {tuple(out.shape)} (check {which}_size, stride, padding and dilation)")
        (g,) = autograd.grad(out, x, grad_output, create_graph=create)
    return g if create else g.detach()


def _input_fn(nd):
    conv = getattr(F, f"conv{nd}d")

    def conv_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        size = _size(input_size, "input_size")
        zeros = weight.new_zeros(size)
        return _grad_of(conv, zeros, weight, grad_output, "input", stride=stride, padding=padding,
                        dilation=dilation, groups=groups)

    conv_input.__name__ = conv_input.__qualname__ = f"conv{nd}d_input"
    conv_input.__doc__ = f"The gradient of ``conv{nd}d`` with respect to its input (of shape ``input_size``)."
    return conv_input


def _weight_fn(nd):
    conv = getattr(F, f"conv{nd}d")

    def conv_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
        size = _size(weight_size, "weight_size")
        zeros = input.new_zeros(size)
        return _grad_of(conv, zeros, input, grad_output, "weight", stride=stride, padding=padding,
                        dilation=dilation, groups=groups)

    conv_weight.__name__ = conv_weight.__qualname__ = f"conv{nd}d_weight"
    conv_weight.__doc__ = f"The gradient of ``conv{nd}d`` with respect to its weight (of shape ``weight_size``)."
    return conv_weight


conv1d_input, conv2d_input, conv3d_input = (_input_fn(n) for n in (1, 2, 3))
conv1d_weight, conv2d_weight, conv3d_weight = (_weight_fn(n) for n in (1, 2, 3))
