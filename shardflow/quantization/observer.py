"""``torch.quantization.observer``: legacy path of ``torch.ao.quantization.observer`` (re-exports)."""

from ..ao.quantization.observer import *  # noqa: F401, F403  (re-export module)
