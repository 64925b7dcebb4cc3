"""``torch.quantization.quantize_jit``: legacy path of ``torch.ao.quantization.quantize_jit`` (re-exports)."""

from ..ao.quantization.quantize_jit import *  # noqa: F401, F403  (re-export module)
