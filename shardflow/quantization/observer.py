"""``torch.quantization.observer``: legacy path of ``torch.ao.quantization.observer`` (re-exports)."""

from ..quant.observer import *
