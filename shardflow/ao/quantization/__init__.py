"""``torch.ao.quantization``'s names, from ``shardflow.quant`` (see docs/QUANT.md);
``quantize_fx`` (FX graph mode) imports and refuses."""

from ...quant import *
from ...quant import fake_quantize, observer, qconfig
from . import quantize_fx
