"""``torch.ao.nn.intrinsic.qat``: fake-quant training forms of the fused modules, and
``freeze_bn_stats`` / ``update_bn_stats`` (what a QAT loop ``apply``s). In torch these act on
the Conv+BatchNorm QAT modules (``ConvBn2d``, ``ConvBnReLU2d``), which shardflow does not
build (``fuse_modules_qat`` refuses those patterns), so on every shardflow module they do
nothing, as torch's do on modules of other types."""

from .....quant.modules.intrinsic import QATConvReLU2d as ConvReLU2d
from .....quant.modules.intrinsic import QATLinearReLU as LinearReLU


def freeze_bn_stats(mod):
    """Stop updating the batch norm statistics of a ConvBn QAT module (none here: no-op)."""


def update_bn_stats(mod):
    """Resume updating them (none here: no-op)."""
