"""``torch.backends.mkldnn``: oneDNN's switches with torch's names and defaults (``enabled``
True, ``deterministic`` False, ``fp32_precision`` ``"none"``; ``allow_tf32`` None, what a CPU
build of torch without Intel GPU support reports), ``set_flags``, ``flags`` and ``verbose``.

shardflow has no oneDNN kernels (NumPy and CuPy compute its convolutions and products), so
``is_available()`` is False and the switches change no result: scripts that turn oneDNN on
or off (``torch.backends.mkldnn.enabled = False``, a common workaround for oneDNN bugs) run
unchanged. ``fp32_precision`` is checked as torch checks it.
"""

from __future__ import annotations

import contextlib

__all__ = ["is_available", "is_acl_available", "set_flags", "flags", "verbose", "VERBOSE_OFF", "VERBOSE_ON",
           "VERBOSE_ON_CREATION"]

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2
_PRECISIONS = ("none", "ieee", "tf32", "bf16")

enabled = True
deterministic = False
allow_tf32 = None  # torch's CPU build: TF32 through oneDNN needs an Intel GPU
fp32_precision = "none"


def is_available() -> bool:
    """False: shardflow never calls oneDNN."""
    return False


def is_acl_available() -> bool:
    """False: no Arm Compute Library either."""
    return False


def _check_precision(precision) -> None:
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Unknown precision: {precision} (expected one of {', '.join(_PRECISIONS)})")


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the switches given (None leaves one as it is); returns the previous values, as torch's."""
    global enabled, deterministic, fp32_precision
    previous = (enabled, deterministic, allow_tf32, fp32_precision)
    if _fp32_precision is not None:
        _check_precision(_fp32_precision)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    if _fp32_precision is not None:
        fp32_precision = _fp32_precision
    return previous


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """The switches set inside a ``with`` block and restored after (torch's defaults: note that
    ``flags()`` with no argument turns oneDNN off for the block, as torch's does)."""
    previous = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*previous)


class verbose:
    """``with verbose(level):`` turns oneDNN's verbose log on in torch; shardflow has no oneDNN
    log, so only ``VERBOSE_OFF`` is accepted (a program asking for the log is told why)."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        if self.level == VERBOSE_OFF:
            return None
        raise RuntimeError(f"torch.backends.mkldnn.verbose({self.level}): shardflow has no oneDNN kernels, so there "
                           "is no oneDNN verbose log (use shardflow.profiler to see which ops run)")

    def __exit__(self, *exc):
        return False
