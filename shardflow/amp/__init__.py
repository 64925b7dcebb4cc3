"""``torch.amp``: automatic mixed precision (layer L5).

``GradScaler`` (``grad_scaler.py``) is complete: dynamic loss scaling with PyTorch's
semantics. ``autocast`` (``autocast_mode.py``) accepts PyTorch's context manager and
decorator but does not cast yet: enabled regions compute in float32 and say so once.
"""

from . import autocast_mode, grad_scaler
from .autocast_mode import (
    MixedPrecisionNotImplementedWarning,
    autocast,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_fwd", "custom_bwd", "is_autocast_available",
           "is_autocast_enabled", "get_autocast_dtype", "MixedPrecisionNotImplementedWarning"]
