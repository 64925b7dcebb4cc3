"""``autocast``: PyTorch's mixed-precision context manager and decorator.

Inside an enabled region, ops run in the dtype the autocast policy gives them
(``policy.py``: PyTorch's CPU and CUDA lists): matmul/linear/conv/bmm/baddbmm/addmm/SDPA in
the region's low dtype (bfloat16 on CPU, float16 on CUDA by default), losses and other
precision-sensitive ops in float32, cat/stack at the widest input dtype; other ops on their
inputs as they are. The casting is done by an op-dispatch hook (``cast_hook.py``), installed
while at least one enabled region is open, so code outside any region pays nothing more
than before. Casts are differentiable; parameters stay float32 and get float32 gradients.

PyTorch's signature, state and checks: ``with autocast('cpu'):``, ``@autocast('cuda')``,
``enabled=``, ``dtype=``, ``cache_enabled=``; regions nest (an inner region with
``enabled=False`` turns casting off, and the outer state comes back on exit);
``is_autocast_enabled`` / ``get_autocast_dtype`` report the region; a CUDA region on a
machine without CUDA is disabled with PyTorch's warning; an unsupported dtype is disabled
with PyTorch's warning. ``custom_fwd`` / ``custom_bwd`` follow PyTorch (``cast_inputs``
casts). The region state is per process (PyTorch's is per thread).

Speed on the CPU: NumPy has no bfloat16 BLAS; ``bfloat16 @ bfloat16`` computes in float32
after converting, and the casts (ml_dtypes) cost time, so a bfloat16 region is usually
*slower* than float32 on the CPU; it saves activation memory and matches what a GPU run
computes. ``shardflow bench amp`` measures both.
"""

from __future__ import annotations

import functools
import warnings

from ..autograd import Tensor
from ..autograd.dispatch import set_autocast_handler
from ..backend import as_dtype, bfloat16, float16, float64
from ..backend.xp import cuda_is_available
from . import cast_hook

__all__ = ["autocast", "autocast_decorator", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype", "custom_fwd", "custom_bwd", "MixedPrecisionNotImplementedWarning",
           "clear_autocast_cache"]

_DEVICES = ("cpu", "cuda")
# Per device type: [enabled, dtype, cache_enabled] of the innermost active region (PyTorch's
# defaults); the same lists the cast hook reads.
_state = cast_hook.state
_state["cpu"][1] = bfloat16
_state["cuda"][1] = float16
# How many enabled regions are open and how many of any kind (the cast cache is cleared when
# the outermost closes; ``torch.autocast_increment/decrement_nesting`` move the second).
_open = {"enabled": 0, "all": 0}
_hook_on = [False]  # whether sync_hook installed the cast hook


class MixedPrecisionNotImplementedWarning(UserWarning):
    """Kept for scripts that filter it: no longer emitted (autocast casts since issue 12)."""


def sync_hook() -> None:
    """Install the cast hook while some device type's state is enabled (by a region, or by
    ``torch.set_autocast_enabled``: amp/state_functions.py), remove it otherwise."""
    on = any(st[0] for st in _state.values())
    if on != _hook_on[0]:  # (re)composing the dispatch table only on a change
        _hook_on[0] = on
        set_autocast_handler(cast_hook.autocast_handler if on else None)


def clear_autocast_cache() -> None:
    """``torch.clear_autocast_cache``: forget the cached low-precision copies of parameters."""
    cast_hook.clear_cache()


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast accepts here: 'cpu' and 'cuda'."""
    return device_type in _DEVICES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an enabled autocast region for ``device_type`` is active (no argument: CUDA, as in PyTorch)."""
    return _state[_check_device(device_type or "cuda")][0]


def get_autocast_dtype(device_type: str):
    """The dtype of the active region (or the default: float16 on CUDA, bfloat16 on CPU)."""
    return _state[_check_device(device_type)][1]


def _check_device(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICES:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type '{device_type}'; shardflow "
            f"supports {', '.join(repr(d) for d in _DEVICES)}"
        )
    return device_type


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context
    manager or decorator (see the module docstring)."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        self.device = _check_device(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else as_dtype(dtype)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        name = device_type.upper()
        if enabled:
            if device_type == "cuda" and not cuda_is_available():
                # torch's words (torch_xla is torch's other reason; shardflow has none)
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in (bfloat16, float16):
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                    f"{name} Autocast only supports dtypes of {bfloat16}, {float16} currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        state = _state[self.device]
        self._prev = list(state)
        self._prev_cache = [st[2] for st in _state.values()]
        state[0], state[1] = self._enabled, self.fast_dtype
        for st in _state.values():  # torch's cache flag is one for all device types
            st[2] = self._cache_enabled
        _open["all"] += 1
        if self._enabled:
            _open["enabled"] += 1
        sync_hook()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _state[self.device][:] = self._prev
        for st, cache in zip(_state.values(), self._prev_cache, strict=True):
            st[2] = cache
        _open["all"] -= 1
        if self._enabled:
            _open["enabled"] -= 1
        sync_hook()
        if _open["all"] == 0:
            cast_hook.clear_cache()
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean "
                "to use autocast as a context manager? For example:\n"
                "    with shardflow.autocast(device_type=...):\n        output = model(input)"
            )
        return autocast_decorator(self, func)


def _cast(value, device_type: str, dtype):
    """Floating tensors (not float64) on ``device_type`` cast to ``dtype``; containers recursed."""
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and value.dtype != float64
        return value.to(dtype) if ok else value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for ``forward`` of a custom ``autograd.Function`` (PyTorch's semantics)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for ``backward``: runs it with the autocast state its forward had."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
