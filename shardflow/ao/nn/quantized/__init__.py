"""``torch.ao.nn.quantized``: static int8 modules (QuantizedTensor in, QuantizedTensor out)."""

from ....quant.modules.functional_modules import FloatFunctional, QFunctional
from ....quant.modules.static import (
    Conv2d,
    DeQuantize,
    Dropout,
    Flatten,
    Hardswish,
    Identity,
    Linear,
    MaxPool2d,
    Quantize,
    ReLU,
    ReLU6,
)
from . import dynamic
