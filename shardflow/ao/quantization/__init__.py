"""``torch.ao.quantization``'s names, from ``shardflow.quant`` (see docs/QUANT.md), with the
submodules programs import by torch's paths (``observer``, ``qconfig``, ``fake_quantize``,
``quantize``, ``stubs``, ``fuse_modules``: re-exports) and ``quantize_fx`` (FX graph mode,
refused). As in torch, ``quantize`` and ``fuse_modules`` are the functions here (the star
import comes after the submodules and rebinds those two names).
"""

# ruff: noqa: I001
# (order matters: the submodules first, then the names that shadow two of them)
from . import fake_quantize, fuse_modules, observer, qconfig, quantize, quantize_fx, stubs
from ...quant import *
