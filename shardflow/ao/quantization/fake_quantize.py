"""``torch.ao.quantization.fake_quantize``: the names of ``shardflow.quant.fake_quantize`` (re-exports)."""

from ...quant.fake_quantize import *  # noqa: F401, F403  (re-export module)
