"""``torch.quantization.stubs``: legacy path of ``torch.ao.quantization.stubs`` (re-exports)."""

from ..ao.quantization.stubs import *  # noqa: F401, F403  (re-export module)
