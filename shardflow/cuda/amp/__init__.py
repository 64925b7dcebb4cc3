"""``torch.cuda.amp``: PyTorch's deprecated spellings of ``torch.amp`` for CUDA.

``autocast(...)`` is ``shardflow.amp.autocast('cuda', ...)`` and ``GradScaler(...)`` is
``shardflow.amp.GradScaler('cuda', ...)``; both warn PyTorch's ``FutureWarning``, in its words. On a
machine without CUDA both then disable themselves (PyTorch's behaviour): the autocast region
runs in float32 and ``scaler.step(optimizer)`` just calls ``optimizer.step()``.
"""

from __future__ import annotations

import functools
import warnings

from ...amp import autocast_mode as _autocast_mode
from ...amp import grad_scaler as _grad_scaler
from ...backend import float16

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast_mode.autocast):
    def __init__(self, enabled: bool = True, dtype=float16, cache_enabled: bool = True):
        warnings.warn(
            "`torch.cuda.amp.autocast(args...)` is deprecated. "
            "Please use `torch.amp.autocast('cuda', args...)` instead.",  # torch's words
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. "
            "Please use `torch.amp.GradScaler('cuda', args...)` instead.",  # torch's words
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``torch.cuda.amp.custom_fwd``: ``shardflow.amp.custom_fwd(device_type='cuda')``."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return _autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    return _autocast_mode.custom_bwd(bwd, device_type="cuda")
