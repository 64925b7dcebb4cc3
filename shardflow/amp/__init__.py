"""``torch.amp``: automatic mixed precision (layer L5).

``autocast`` (``autocast_mode.py``): PyTorch's context manager and decorator; inside an
enabled region ops are cast by the policy (``policy.py``, PyTorch's CPU/CUDA lists) through
an op-dispatch hook (``cast_hook.py``). ``GradScaler`` (``grad_scaler.py``): dynamic loss
scaling with PyTorch's semantics; under data parallelism the inf/NaN flag is all-reduced so
every rank skips the same steps. See docs/AMP.md.
"""

from .._lazy import lazy_attributes
from . import autocast_mode
from .autocast_mode import (
    MixedPrecisionNotImplementedWarning,
    autocast,
    clear_autocast_cache,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)

__all__ = ["GradScaler", "autocast", "custom_fwd", "custom_bwd", "is_autocast_available",
           "is_autocast_enabled", "get_autocast_dtype", "MixedPrecisionNotImplementedWarning",
           "clear_autocast_cache"]


# GradScaler loads on first use (PEP 562): every ``import shardflow`` imports amp for autocast.
__getattr__, __dir__ = lazy_attributes(__name__, globals(), submodules={"grad_scaler"},
                                       names={"GradScaler": ("grad_scaler", "GradScaler")})
