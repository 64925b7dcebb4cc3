"""``torch.ao.nn.intrinsic``: fused float modules (``quantized`` and ``qat`` forms below)."""

from ....quant.modules.intrinsic import ConvReLU2d, LinearReLU
from . import qat, quantized
