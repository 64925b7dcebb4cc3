"""``torch.ao.nn``: ``quantized`` (static and ``quantized.dynamic``) and ``qat`` modules."""

from . import qat, quantized
