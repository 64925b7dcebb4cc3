"""torch's top-level autocast state functions (``torch.set_autocast_enabled``,
``get_autocast_cpu_dtype``, ``autocast_increment_nesting`` ...) over ``autocast``'s own state.

They read and write the per-device-type ``[enabled, dtype, cache_enabled]`` lists that
``autocast`` regions set and the cast hook reads (``cast_hook.state``), so
``set_autocast_enabled('cpu', True)`` really casts the next ops, as in torch, and a region
entered afterwards restores it on exit (``autocast_mode.sync_hook`` keeps the hook installed
while any device type is enabled). The nesting counter is the regions' own (the cast cache is
cleared when ``autocast_decrement_nesting`` reaches 0 in torch's ``autocast.__exit__``, and when
the outermost shardflow region closes). The cache flag is torch's one process-wide flag: the
setter writes it for every device type, the getter is true while every device type has it.

The CPU/GPU-specific forms are deprecated in torch: each warns with torch's
``DeprecationWarning`` text naming the device-type form, then does the same. Argument type
errors are torch's messages.
"""

from __future__ import annotations

import warnings

from ..backend import dtype as _dtype
from . import autocast_mode as _mode

__all__ = [
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
    "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "set_autocast_enabled", "set_autocast_dtype",
    "is_autocast_cache_enabled", "set_autocast_cache_enabled", "autocast_increment_nesting",
    "autocast_decrement_nesting",
]

_state = _mode._state


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def _bool_arg(value, op: str, position: int) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{op}(): argument 'enabled' (position {position}) must be bool, not {type(value).__name__}")
    return value


def _legacy_bool(value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"enabled must be a bool (got {type(value).__name__})")
    return value


def _legacy_dtype(value):
    if not isinstance(value, _dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(value).__name__})")
    return value


def set_autocast_enabled(*args) -> None:
    """``set_autocast_enabled(device_type, enabled)``; the one-argument form sets CUDA's."""
    if len(args) == 1:
        device_type, enabled = "cuda", _bool_arg(args[0], "set_autocast_enabled", 1)
    elif len(args) == 2:
        device_type, enabled = _mode._check_device(args[0]), _bool_arg(args[1], "set_autocast_enabled", 2)
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 positional arguments but {len(args)} were given")
    _state[device_type][0] = enabled
    _mode.sync_hook()


def set_autocast_dtype(device_type: str, dtype) -> None:
    """The low-precision dtype autocast casts ``device_type``'s ops to."""
    device_type = _mode._check_device(device_type)
    if not isinstance(dtype, _dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    _state[device_type][1] = dtype


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _mode.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled) -> None:
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", _legacy_bool(enabled))


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _mode.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", _legacy_dtype(dtype))


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _mode.get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", _legacy_dtype(dtype))


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the low-precision copies of leaf tensors (torch's default: yes)."""
    return all(st[2] for st in _state.values())


def set_autocast_cache_enabled(enabled) -> None:
    for st in _state.values():
        st[2] = _legacy_bool(enabled)


def autocast_increment_nesting() -> int:
    """One more open autocast level; returns the new depth."""
    _mode._open["all"] += 1
    return _mode._open["all"]


def autocast_decrement_nesting() -> int:
    """One autocast level fewer; returns the new depth (torch lets it go below 0)."""
    _mode._open["all"] -= 1
    return _mode._open["all"]
