"""``torch.ao.nn.quantized.dynamic``: int8 weights, activations quantized per call (``Linear``,
``LSTM``)."""

from .....quant.modules.dynamic import Linear
from .....quant.modules.dynamic_rnn import LSTM

__all__ = ["Linear", "LSTM"]
