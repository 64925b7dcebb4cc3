"""``torch.ao.nn.qat``: float modules that fake-quantize their weights."""

from ....quant.modules.qat import Conv2d, Linear
