"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each is a context manager and a decorator (with or without parentheses for ``no_grad``,
``enable_grad`` and ``inference_mode``), as in PyTorch. The mode is per thread, as
PyTorch's is: a ``no_grad`` block in one thread (a data-loading or serving thread) does not
turn off graph recording in another, and every new thread starts with gradients enabled.

The state is one attribute of a ``threading.local`` (``_state.enabled``); the class
attribute is the default each new thread sees. Reading a ``threading.local`` costs about 600
instructions, a tenth of a small op, so the op path reads ``_off[0]`` first: how many threads
have grad mode off right now. While it is 0 (no ``no_grad`` block open anywhere, the
training forward's case) every thread is on and the thread-local is not read; otherwise the
op reads its own thread's flag. Every write goes through :func:`_set_enabled`, which keeps
the count (under a lock: several threads may change modes at once). A thread that ends
inside ``no_grad`` leaves the count above 0, which only makes later checks take the
thread-local read.
"""

from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    enabled = True  # every thread starts with grad mode on


_state = _GradState()

# How many threads have grad mode off (see the module docstring); a list so readers in other
# modules see writes (``from .grad_mode import _off``).
_off = [0]
_off_lock = threading.Lock()


def _set_enabled(mode: bool) -> None:
    """Set this thread's grad mode, keeping ``_off`` (the count of threads with it off)."""
    mode = bool(mode)
    if _state.enabled is mode:
        return
    with _off_lock:
        _state.enabled = mode
        _off[0] += -1 if mode else 1


def grad_recorded() -> bool:
    """``is_grad_enabled()`` on the op path: the thread-local is read only while some
    thread has grad mode off."""
    return not _off[0] or _state.enabled


def is_grad_enabled() -> bool:
    """Whether ops run in this thread record the graph."""
    return _state.enabled


class _GradModeContext:
    """Sets ``_state.enabled`` to ``self.mode`` inside the block, restores it after."""

    mode = True

    def __enter__(self):
        self._prev = _state.enabled
        _set_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def clone(self):
        """A fresh context with the same mode (one per call of a decorated function, so
        recursive and concurrent calls each restore their own previous mode)."""
        return self.__class__()

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper


class _NoParamContext(_GradModeContext):
    """``@no_grad`` without parentheses decorates the function directly (PyTorch 2)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamContext):
    """Ops inside record no graph: outputs have ``requires_grad=False``."""

    mode = False


class enable_grad(_NoParamContext):
    """Ops inside record the graph, even within ``no_grad``."""

    mode = True


class inference_mode(_GradModeContext):
    """Like ``no_grad`` (shardflow has no separate inference tensors). As in PyTorch,
    ``inference_mode(False)`` turns grad mode *on* inside the block."""

    def __new__(cls, mode=True):
        if mode is None or isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # used as @inference_mode on a function

    def __init__(self, mode: bool = True):
        self.mode = not mode

    def clone(self):
        return self.__class__(not self.mode)


class set_grad_enabled(_GradModeContext):
    """Sets grad mode on construction (so ``set_grad_enabled(False)`` works as a plain call,
    as in PyTorch); as a context manager or decorator, restores the previous mode after."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = _state.enabled
        _set_enabled(self.mode)

    def __enter__(self):
        return self

    def clone(self):
        return _ScopedGradMode(self.mode)

    def __call__(self, func):
        _set_enabled(self._prev)  # used as a decorator: construction must not leak
        return super().__call__(func)


class _ScopedGradMode(_GradModeContext):
    def __init__(self, mode: bool):
        self.mode = mode
