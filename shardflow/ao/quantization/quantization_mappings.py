"""``torch.ao.quantization.quantization_mappings``: the names of ``shardflow.quant.quantization_mappings`` (re-exports)."""

from ...quant.quantization_mappings import *  # noqa: F401, F403  (re-export module)
