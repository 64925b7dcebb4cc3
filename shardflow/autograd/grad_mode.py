"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each is a context manager and a decorator, as in PyTorch. The state is one module-level
flag read on every op (``_enabled[0]``), the cheapest thing Python offers.
"""

from __future__ import annotations

import functools

_enabled = [True]


def is_grad_enabled() -> bool:
    return _enabled[0]


class _GradModeContext:
    mode = True

    def __enter__(self):
        self._prev = _enabled[0]
        _enabled[0] = self.mode
        return self

    def __exit__(self, *exc):
        _enabled[0] = self._prev
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Ops inside record no graph: outputs have ``requires_grad=False``."""

    mode = False


class enable_grad(_GradModeContext):
    mode = True


class inference_mode(_GradModeContext):
    """Like ``no_grad`` (shardflow has no separate inference tensors)."""

    def __init__(self, mode: bool = True):
        self.mode = not mode

    def __call__(self, func):
        mode = self.mode

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            prev = _enabled[0]
            _enabled[0] = mode
            try:
                return func(*args, **kwargs)
            finally:
                _enabled[0] = prev

        return wrapper


class set_grad_enabled(_GradModeContext):
    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = _enabled[0]
        _enabled[0] = self.mode  # takes effect when called as a function too, like PyTorch

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _enabled[0] = self._prev
        return False
