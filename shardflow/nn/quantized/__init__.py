"""``torch.nn.quantized``: PyTorch's legacy path for ``torch.ao.nn.quantized`` (static int8
modules over ``shardflow.quant``; re-exports only), with ``dynamic`` below."""

from ...ao.nn.quantized import *
from . import dynamic
