"""``torch.ao.quantization``'s names, from ``shardflow.quant`` (see docs/QUANT.md)."""

from ...quant import *
from ...quant import fake_quantize, observer, qconfig
