"""Process-wide switches with PyTorch's top-level names: ``set_deterministic_debug_mode`` /
``get_deterministic_debug_mode``, ``set_warn_always`` / ``is_warn_always_enabled``,
``set_flush_denormal``, ``init_num_threads``.

* The deterministic debug mode is another spelling of ``use_deterministic_algorithms``
  (PyTorch's mapping): 0 / ``"default"`` = off, 1 / ``"warn"`` = on with ``warn_only``,
  2 / ``"error"`` = on; ``get_deterministic_debug_mode`` reads that setting back.
* ``set_warn_always(b)``: the flag PyTorch's once-only warnings read; shardflow's once-per-
  process warnings read it too (``backend.user_warning.first_time``): with it on they are given
  every time.
* ``set_flush_denormal(mode)``: NumPy and CuPy cannot set the CPU's flush-to-zero mode, so
  this answers False, as PyTorch does on CPUs without the feature (nothing changes).
* ``init_num_threads()``: nothing to set up (NumPy's BLAS pool starts on first use).
"""

from __future__ import annotations

from ..backend.user_warning import is_warn_always_enabled, set_warn_always

__all__ = ["set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_warn_always",
           "is_warn_always_enabled", "set_flush_denormal", "init_num_threads"]

_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/"default": deterministic algorithms off; 1/"warn": on, warn only; 2/"error": on."""
    from . import use_deterministic_algorithms

    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 when deterministic algorithms are off, 1 when on with ``warn_only``, else 2."""
    from . import (
        are_deterministic_algorithms_enabled,
        is_deterministic_algorithms_warn_only_enabled,
    )

    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2




def set_flush_denormal(mode: bool) -> bool:
    """False: flush-to-zero cannot be set from NumPy/CuPy (PyTorch's answer on such CPUs)."""
    bool(mode)
    return False


def init_num_threads() -> None:
    """Nothing to initialise (PyTorch's per-thread OpenMP/MKL setup has no counterpart)."""
    return None
