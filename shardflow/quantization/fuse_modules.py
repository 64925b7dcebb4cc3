"""``torch.quantization.fuse_modules``: legacy path of ``torch.ao.quantization.fuse_modules`` (re-exports)."""

from ..ao.quantization.fuse_modules import *  # noqa: F401, F403  (re-export module)
