"""PyTorch's ``torch.ao`` paths for ``shardflow.quant`` (re-exports only):
``shardflow.ao.quantization`` (workflows, observers, qconfigs), ``shardflow.ao.nn.quantized``
(static int8 modules), ``shardflow.ao.nn.quantized.dynamic`` (dynamic int8 Linear),
``shardflow.ao.nn.qat`` (fake-quant training modules)."""

from . import nn, quantization
