"""``torch.ao.nn.intrinsic.quantized``: int8 layers with the ReLU folded in."""

from .....quant.modules.static import ConvReLU2d, LinearReLU
