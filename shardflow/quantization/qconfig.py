"""``torch.quantization.qconfig``: legacy path of ``torch.ao.quantization.qconfig`` (re-exports)."""

from ..quant.qconfig import *
