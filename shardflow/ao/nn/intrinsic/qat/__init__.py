"""``torch.ao.nn.intrinsic.qat``: fake-quant training forms of the fused modules."""

from .....quant.modules.intrinsic import QATConvReLU2d as ConvReLU2d
from .....quant.modules.intrinsic import QATLinearReLU as LinearReLU
