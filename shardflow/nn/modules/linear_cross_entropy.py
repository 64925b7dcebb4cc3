"""``nn.LinearCrossEntropyLoss`` (PyTorch 2.13): a ``Linear`` to ``num_classes * prod(out_features)``
logits and the cross entropy loss in one module (``F.linear_cross_entropy``; see
``nn/functional_linear_ce.py`` for the shape rules and what ``options`` does here).

As PyTorch's, the linear layer is stored flat (``self.linear.weight`` is
``(C * prod(out_features), in_features)``) and reshaped in ``forward``; ``weight`` is a buffer
(the class weights), so the state dict is PyTorch's (``weight``, ``linear.weight``,
``linear.bias``)."""

from __future__ import annotations

import math

from ..functional_linear_ce import LinearCrossEntropyOptions, linear_cross_entropy
from .linear import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``Linear(in_features, C * prod(out_features))(input)`` against
    ``target`` (class indices or probabilities)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple[int, ...] = (),
                 bias: bool = False, device=None, dtype=None, reduction: str = "mean", weight=None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input, target):
        shape = (self.num_classes, *self.out_features)
        bias = self.linear.bias
        return linear_cross_entropy(
            input, self.linear.weight.reshape(*shape, self.linear.in_features), target,
            linear_bias=None if bias is None else bias.reshape(shape), weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
            options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
