"""``torch.ao.nn.quantized.dynamic``: int8 weights, activations quantized per call."""

from .....quant.modules.dynamic import Linear
