"""``torch.quantization.quant_type``: legacy path of ``torch.ao.quantization.quant_type`` (re-exports)."""

from ..ao.quantization.quant_type import *  # noqa: F401, F403  (re-export module)
