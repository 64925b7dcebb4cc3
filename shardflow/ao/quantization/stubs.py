"""``torch.ao.quantization.stubs``: the names of ``shardflow.quant.stubs`` (re-exports)."""

from ...quant.stubs import *  # noqa: F401, F403  (re-export module)
