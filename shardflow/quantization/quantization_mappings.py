"""``torch.quantization.quantization_mappings``: legacy path of ``torch.ao.quantization.quantization_mappings`` (re-exports)."""

from ..ao.quantization.quantization_mappings import *  # noqa: F401, F403  (re-export module)
