"""``torch.ao.quantization.fuse_modules``: the names of ``shardflow.quant.fuse`` (re-exports)."""

from ...quant.fuse import *  # noqa: F401, F403  (re-export module)
