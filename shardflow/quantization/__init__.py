"""``torch.quantization``: torch's older path of ``torch.ao.quantization`` (the recipes and
tutorials still write ``torch.quantization.quantize_dynamic``); the same names, from
``shardflow.ao.quantization`` (see docs/QUANT.md)."""

from ..ao.quantization import *  # noqa: F403
from ..ao.quantization import fake_quantize, observer, qconfig  # noqa: F401
from ..quant import quantize_dynamic  # noqa: F401
