"""``torch.ao.quantization.quantize``: the names of ``shardflow.quant.quantize`` (re-exports)."""

from ...quant.quantize import *  # noqa: F401, F403  (re-export module)
