"""``shardflow.nn.utils``: gradient clipping, parameter/vector conversion, ``rnn`` (packed
variable-length sequences), ``parametrize`` / ``parametrizations`` (weight norm, spectral
norm), the legacy ``weight_norm`` / ``spectral_norm`` hooks, conv/linear + BatchNorm fusion,
``skip_init`` and the conv weight memory-format converters."""

from ..._lazy import lazy_attributes
from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .spectral_norm import remove_spectral_norm, spectral_norm
from .total_norm import clip_grad_norm, clip_grads_with_norm_, get_total_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters",
           "parametrizations", "parametrize", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm", "get_total_norm", "clip_grads_with_norm_", "clip_grad_norm",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "skip_init", "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


# Submodules that load on first use (PEP 562): every ``import shardflow`` imports nn.utils
# (for ``rnn``), few programs prune or parametrize.
__getattr__, __dir__ = lazy_attributes(
    __name__, globals(), submodules={"parametrizations", "parametrize", "prune", "stateless"})
