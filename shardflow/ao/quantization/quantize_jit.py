"""``torch.ao.quantization.quantize_jit``: the names of ``shardflow.quant.quantize_jit`` (re-exports)."""

from ...quant.quantize_jit import *  # noqa: F401, F403  (re-export module)
