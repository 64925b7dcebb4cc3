"""``torch.ao.quantization.qconfig``: the names of ``shardflow.quant.qconfig`` (re-exports)."""

from ...quant.qconfig import *  # noqa: F401, F403  (re-export module)
