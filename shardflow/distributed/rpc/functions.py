"""``rpc.functions.async_execution`` (PyTorch's decorator)."""

from __future__ import annotations

import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """Mark ``fn`` as returning a ``Future``: the callee answers the RPC when that future
    completes (with its value), instead of when ``fn`` returns, and holds no thread
    meanwhile. ``fn`` may chain further RPCs with ``then`` and return the chained future.
    Put it innermost under ``@staticmethod`` / ``@classmethod``, as in PyTorch."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper._shardflow_async_execution = True
    return wrapper
