"""``torch.quantization.fuse_modules``: legacy path of ``torch.ao.quantization.fuse_modules``."""

from ..quant.fuse import *  # noqa: F401, F403  (re-export module)
