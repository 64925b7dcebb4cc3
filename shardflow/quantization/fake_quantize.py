"""``torch.quantization.fake_quantize``: legacy path of ``torch.ao.quantization.fake_quantize`` (re-exports)."""

from ..ao.quantization.fake_quantize import *  # noqa: F401, F403  (re-export module)
