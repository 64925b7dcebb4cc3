"""``torch.quantization.quantize_fx``: legacy path of ``torch.ao.quantization.quantize_fx``
(FX graph mode, refused: see that module)."""

from ..ao.quantization.quantize_fx import *  # noqa: F401, F403  (re-export module)
