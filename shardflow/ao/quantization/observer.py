"""``torch.ao.quantization.observer``: the names of ``shardflow.quant.observer`` (re-exports)."""

from ...quant.observer import *  # noqa: F401, F403  (re-export module)
