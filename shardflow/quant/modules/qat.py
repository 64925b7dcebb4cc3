"""QAT modules (``torch.ao.nn.qat``): ``Linear`` / ``Conv2d`` whose forward fake-quantizes the
weight (``weight_fake_quant``, from ``qconfig.weight``) before the float op. The weight
Parameter is the float module's own (shared), so an optimizer keeps training it; gradients
pass the fake quantization straight through inside the clamp range."""

from __future__ import annotations

from ...nn import functional as F
from ...nn.modules.conv import Conv2d as _FloatConv2d
from ...nn.modules.linear import Linear as _FloatLinear

__all__ = ["Linear", "Conv2d"]


def _need_qconfig(mod, who):
    qconfig = getattr(mod, "qconfig", None)
    if qconfig is None:
        raise ValueError(
            f"qat.{who}.from_float: the module has no qconfig; set model.qconfig = "
            "get_default_qat_qconfig('x86') before prepare_qat"
        )
    return qconfig


class Linear(_FloatLinear):
    def __init__(self, in_features, out_features, bias=True, qconfig=None):
        super().__init__(in_features, out_features, bias)
        if qconfig is None:
            raise ValueError("qat.Linear needs a qconfig (e.g. get_default_qat_qconfig('x86'))")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod):
        qconfig = _need_qconfig(mod, "Linear")
        new = cls(mod.in_features, mod.out_features, mod.bias is not None, qconfig=qconfig)
        new.weight = mod.weight
        new.bias = mod.bias
        return new


class Conv2d(_FloatConv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", qconfig=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode)
        if qconfig is None:
            raise ValueError("qat.Conv2d needs a qconfig (e.g. get_default_qat_qconfig('x86'))")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod):
        qconfig = _need_qconfig(mod, "Conv2d")
        new = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding,
                  mod.dilation, mod.groups, mod.bias is not None, mod.padding_mode, qconfig=qconfig)
        new.weight = mod.weight
        new.bias = mod.bias
        return new
