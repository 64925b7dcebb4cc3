"""``torch.quantization.fuse_modules``: legacy path of ``torch.ao.quantization.fuse_modules``."""

from ..quant.fuse import *
