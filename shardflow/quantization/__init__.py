"""``torch.quantization``: PyTorch's legacy path for ``torch.ao.quantization`` (re-exports only).

The names are ``shardflow.ao.quantization``'s (eager-mode workflows, observers, qconfigs over
``shardflow.quant``, docs/QUANT.md); the submodules programs import by this path
(``observer``, ``qconfig``, ``fake_quantize``, ``quantize``, ``stubs``, ``fuse_modules``,
``quantize_fx``) re-export the same modules' names. ``quantize_fx`` imports, and its functions
refuse FX graph mode (no ``torch.fx`` here). As in torch, ``torch.quantization.quantize`` and
``.fuse_modules`` are the functions (the star import below comes after the submodules, so it
rebinds those two names).
"""

# ruff: noqa: I001
# (order matters: the submodules first, then the names that shadow two of them)
from . import (fake_quantize, fuse_modules, fuser_method_mappings, observer, qconfig, quant_type,
               quantization_mappings, quantize, quantize_fx, quantize_jit, stubs)
from ..ao.quantization import *
