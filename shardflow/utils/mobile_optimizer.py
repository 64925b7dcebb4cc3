"""``torch.utils.mobile_optimizer``: importable with torch's names (``MobileOptimizerType``,
``LintCode``, ``optimize_for_mobile``, ``generate_mobile_module_lints``), so a training script
that ends with an optional mobile export loads and trains; the export itself raises.

``optimize_for_mobile`` rewrites a TorchScript module for the PyTorch Mobile / Lite
interpreter; shardflow has no TorchScript (``torch.jit.script`` gives back an eager module), so
both functions raise NotImplementedError naming the route: save the weights with
``shardflow.save``, load them into the same model class under PyTorch, and script and optimise
it there.
"""

from __future__ import annotations

import enum

__all__ = ["MobileOptimizerType", "LintCode", "optimize_for_mobile", "generate_mobile_module_lints"]


class MobileOptimizerType(enum.IntEnum):
    """The passes ``optimization_blocklist`` names (torch's values)."""

    CONV_BN_FUSION = 0
    INSERT_FOLD_PREPACK_OPS = 1
    REMOVE_DROPOUT = 2
    FUSE_ADD_RELU = 3
    HOIST_CONV_PACKED_PARAMS = 4
    VULKAN_AUTOMATIC_GPU_TRANSFER = 6


class LintCode(enum.Enum):
    BUNDLED_INPUT = 1
    REQUIRES_GRAD = 2
    DROPOUT = 3
    BATCHNORM = 4


def _refuse(what: str):
    raise NotImplementedError(
        f"torch.utils.mobile_optimizer.{what}: shardflow has no TorchScript, so there is no script module to "
        "optimise for PyTorch Mobile; save the weights with shardflow.save(model.state_dict(), "
        "'model.safetensors'), load them into the same model class under PyTorch, then torch.jit.script and "
        "optimize_for_mobile there")


def optimize_for_mobile(script_module, optimization_blocklist=None, preserved_methods=None, backend: str = "CPU"):
    """Refused (see the module docstring)."""
    _refuse("optimize_for_mobile()")


def generate_mobile_module_lints(script_module):
    """Refused (see the module docstring)."""
    _refuse("generate_mobile_module_lints()")
