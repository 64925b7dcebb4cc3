"""``torch.cpu.amp``: PyTorch's deprecated spellings of ``torch.amp`` for the CPU.

``autocast(...)`` is ``shardflow.amp.autocast('cpu', ...)`` (bfloat16 by default) and
``GradScaler(...)`` is ``shardflow.amp.GradScaler('cpu', ...)``; both warn PyTorch's
``FutureWarning`` word for word (torch's names, as the other deprecation warnings).
"""

from __future__ import annotations

import warnings

from ...amp import autocast_mode as _autocast_mode
from ...amp import grad_scaler as _grad_scaler
from ...backend import bfloat16

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast_mode.autocast):
    def __init__(self, enabled: bool = True, dtype=bfloat16, cache_enabled: bool = True):
        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. "
            "Please use `torch.amp.autocast('cpu', args...)` instead.",  # torch's words
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. "
            "Please use `torch.amp.GradScaler('cpu', args...)` instead.",  # torch's words
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
