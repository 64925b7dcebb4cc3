"""Anomaly detection (``torch.autograd.detect_anomaly`` and friends), PyTorch's names.

``detect_anomaly(check_nan=True)`` (context manager and decorator) and
``set_detect_anomaly(mode, check_nan=True)`` (takes effect when called; a context manager
that restores the previous state) set the process-wide flags read by
``is_anomaly_enabled()`` / ``is_anomaly_check_nan_enabled()`` (``set_anomaly_enabled`` sets
them directly). While both are on, the backward engine checks every Function's input
gradients as they are produced and raises ``RuntimeError: Function 'SqrtBackward0' returned
nan values in its 0th output.`` (PyTorch's text; shardflow's Function for ``sqrt`` is
``Sqrt``, named with torch's ``Backward0`` suffix) before any of them is passed on.

Cost when off: the engine reads the flag once per backward pass (``_flags``), and tests one
local boolean per node. What PyTorch also does and shardflow does not: record each forward
op's stack trace to print with a backward error.
"""

from __future__ import annotations

import functools
import warnings

from ..backend import get_array_module

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]

# [enabled, check_nan]: process-wide as in PyTorch (AnomalyMode is a global, not per thread);
# a list so the engine's ``from .anomaly_mode import _flags`` sees every write.
_flags = [False, True]


def is_anomaly_enabled() -> bool:
    return _flags[0]


def is_anomaly_check_nan_enabled() -> bool:
    return _flags[1]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    _flags[0] = bool(enabled)
    _flags[1] = bool(check_nan)


def check_gradients_for_nan(fn, in_grads) -> None:
    """Raise PyTorch's error if an input gradient ``fn.backward`` returned holds a NaN."""
    for i, g in enumerate(in_grads):
        if g is None or getattr(g, "dtype", None) is None or g.dtype.kind not in "fc":
            continue
        if bool(get_array_module(g).isnan(g).any()):
            name = fn.name() if hasattr(fn, "name") else type(fn).__name__
            if not name.rstrip("0123456789").endswith("Backward"):
                name += "Backward0"
            raise RuntimeError(f"Function '{name}' returned nan values in its {i}th output.")


class detect_anomaly:
    """Context manager / decorator turning anomaly detection on for its block."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return func(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Set anomaly detection on or off now; as a context manager, restore it on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
