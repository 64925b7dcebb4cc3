"""Fused modules (``torch.ao.nn.intrinsic``): ``ConvReLU2d`` and ``LinearReLU`` are
``Sequential(layer, ReLU)`` in float (state_dict keys ``<name>.0.weight`` as in PyTorch), one
observer on the ReLU's output after ``prepare`` (so the output range has no negative half to
waste), and one int8 layer with the ReLU folded into its requantization after ``convert``.
QAT forms: ``qat.ConvReLU2d`` / ``qat.LinearReLU`` (fake-quant weight, then ReLU)."""

from __future__ import annotations

from ...nn import functional as F
from ...nn.modules.container import Sequential
from .qat import Conv2d as QATConv2d
from .qat import Linear as QATLinear

__all__ = ["FusedModule", "ConvReLU2d", "LinearReLU", "QATConvReLU2d", "QATLinearReLU"]


class FusedModule(Sequential):
    """Marker base (PyTorch's ``_FusedModule``): ``prepare`` observes it as one leaf."""


class ConvReLU2d(FusedModule):
    def __init__(self, conv, relu):
        super().__init__(conv, relu)


class LinearReLU(FusedModule):
    def __init__(self, linear, relu):
        super().__init__(linear, relu)


class QATConvReLU2d(QATConv2d):
    def _get_name(self) -> str:
        return "ConvReLU2d"  # torch's class name (ao.nn.intrinsic.qat.ConvReLU2d) in printouts

    def forward(self, input):
        return F.relu(super().forward(input))

    @classmethod
    def from_float(cls, mod):
        conv = mod[0]
        conv.qconfig = mod.qconfig
        return super().from_float(conv)


class QATLinearReLU(QATLinear):
    def _get_name(self) -> str:
        return "LinearReLU"

    def forward(self, input):
        return F.relu(super().forward(input))

    @classmethod
    def from_float(cls, mod):
        lin = mod[0]
        lin.qconfig = mod.qconfig
        return super().from_float(lin)
