"""``torch.ao.quantization``'s names, from ``shardflow.quant`` (see docs/QUANT.md), with the
submodules programs import by torch's paths (``observer``, ``qconfig``, ``fake_quantize``,
``quantize``, ``stubs``, ``fuse_modules``: re-exports; ``fuser_method_mappings``: the fusers and
``get_fuser_method``) and ``quantize_fx`` (FX graph mode, refused). As in torch, ``quantize`` and ``fuse_modules`` are the functions here (the star
import comes after the submodules and rebinds those two names).
"""

# ruff: noqa: I001
# (order matters: the submodules first, then the names that shadow two of them)
from . import (fake_quantize, fuse_modules, fuser_method_mappings, observer, qconfig, quant_type,
               quantization_mappings, quantize, quantize_fx, quantize_jit, stubs)
from ...quant import *
from .fuser_method_mappings import (fuse_conv_bn, fuse_conv_bn_relu, fuse_convtranspose_bn, fuse_linear_bn,
                                    get_fuser_method)
