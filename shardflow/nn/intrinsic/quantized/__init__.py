"""``torch.nn.intrinsic.quantized``: legacy path of ``torch.ao.nn.intrinsic.quantized`` (re-exports)."""

from ....ao.nn.intrinsic.quantized import *
