"""``torch.nn.quantized.dynamic``: legacy path of ``torch.ao.nn.quantized.dynamic`` (re-exports)."""

from ....ao.nn.quantized.dynamic import *
