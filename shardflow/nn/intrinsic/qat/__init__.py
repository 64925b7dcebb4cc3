"""``torch.nn.intrinsic.qat``: legacy path of ``torch.ao.nn.intrinsic.qat`` (re-exports)."""

from ....ao.nn.intrinsic.qat import *
