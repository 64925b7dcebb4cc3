"""``torch.ao.quantization.quant_type``: the names of ``shardflow.quant.quant_type`` (re-exports)."""

from ...quant.quant_type import *  # noqa: F401, F403  (re-export module)
