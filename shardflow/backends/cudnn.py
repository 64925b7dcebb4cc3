"""``torch.backends.cudnn``: flags with PyTorch's defaults (``enabled`` True, ``benchmark``
False, ``deterministic`` False, ``allow_tf32`` True). shardflow has no cuDNN: ``is_available()``
is False, ``version()`` None, and the flags change nothing (see ``backends/__init__.py``)."""

from __future__ import annotations

import contextlib

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version():
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside a ``with`` block, restoring them after (as PyTorch's ``cudnn.flags``)."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    old = {n: g[n] for n in names}
    g.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
             deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(old)
