"""``torch.nn.intrinsic``: legacy path of ``torch.ao.nn.intrinsic`` (fused modules; re-exports),
with ``qat`` and ``quantized`` below."""

from ...ao.nn.intrinsic import *
from . import qat, quantized
