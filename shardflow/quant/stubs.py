"""``QuantStub`` / ``DeQuantStub`` / ``QuantWrapper``: where a model enters and leaves the
quantized region (eager-mode PyTorch). Before ``convert`` they are identities (the
QuantStub gets an observer from ``prepare``); ``convert`` turns them into ``Quantize`` /
``DeQuantize``."""

from __future__ import annotations

from ..nn.module import Module

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class _Stub(Module):
    """An identity until ``convert`` replaces it; holds ``qconfig`` when given one."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub):
    """Where float values enter the quantized region (``Quantize`` after ``convert``)."""


class DeQuantStub(_Stub):
    """Where quantized values leave the quantized region (``DeQuantize`` after ``convert``)."""


class QuantWrapper(Module):
    """``quant -> module -> dequant`` around a float module that has no stubs of its own."""

    def __init__(self, module: Module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.quant = QuantStub(qconfig)
        self.dequant = DeQuantStub(qconfig)
        self.module = module

    def forward(self, x):
        return self.dequant(self.module(self.quant(x)))
