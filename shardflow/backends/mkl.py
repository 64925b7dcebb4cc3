"""``torch.backends.mkl``: ``is_available()`` False (shardflow calls no MKL kernel itself; NumPy
may link one for its BLAS) and ``verbose``, which accepts only ``VERBOSE_OFF`` (there is no
MKL verbose log to turn on)."""

from __future__ import annotations

__all__ = ["is_available", "verbose", "VERBOSE_OFF", "VERBOSE_ON"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    return False


class verbose:
    """``with verbose(VERBOSE_OFF):`` does nothing; ``VERBOSE_ON`` raises (no MKL log here)."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return None
        raise RuntimeError("torch.backends.mkl.verbose(VERBOSE_ON): shardflow calls no MKL kernel, so there is no "
                           "MKL verbose log (use shardflow.profiler to see which ops run)")

    def __exit__(self, *exc):
        return False
