"""``torch.ao.nn``: ``quantized`` (static and ``quantized.dynamic``), ``qat`` and ``intrinsic`` (fused) modules."""

from . import intrinsic, qat, quantized
