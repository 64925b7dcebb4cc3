"""``torch.quantization.qconfig``: legacy path of ``torch.ao.quantization.qconfig`` (re-exports)."""

from ..ao.quantization.qconfig import *  # noqa: F401, F403  (re-export module)
