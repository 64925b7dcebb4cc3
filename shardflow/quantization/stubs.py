"""``torch.quantization.stubs``: legacy path of ``torch.ao.quantization.stubs`` (re-exports)."""

from ..quant.stubs import *  # noqa: F401, F403  (re-export module)
