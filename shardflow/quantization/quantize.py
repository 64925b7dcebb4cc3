"""``torch.quantization.quantize``: legacy path of ``torch.ao.quantization.quantize`` (re-exports)."""

from ..ao.quantization.quantize import *  # noqa: F401, F403  (re-export module)
