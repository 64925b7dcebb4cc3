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
    inference = False  # inside inference_mode (a separate flag: torch tells the two apart)


_state = _GradState()

# How many threads have grad mode off (see the module docstring); a list so readers in other
# modules see writes (``from .grad_mode import _off``).
_off = [0]
_off_lock = threading.Lock()
# How many threads are inside inference_mode: the no-record op path tests it (only there) to
# mark the tensors it makes as inference tensors (Tensor.is_inference)
_inference_on = [0]


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


def _set_inference(mode: bool) -> None:
    """Set this thread's inference-mode flag, keeping ``_inference_on``."""
    mode = bool(mode)
    if _state.inference is mode:
        return
    with _off_lock:
        _state.inference = mode
        _inference_on[0] += 1 if mode else -1


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()`` (torch.is_inference_mode_enabled)."""
    return _state.inference


def mark_inference(out):
    """Mark the Tensor(s) ``out`` an op made inside inference mode (``Tensor.is_inference``);
    the op path calls it only while some thread is in inference mode."""
    if _state.inference:
        for t in out if type(out) is tuple else (out,):
            t._sf_inference = True
    return out


def is_inference_tensor(t) -> bool:
    """``Tensor.is_inference()``: made by an op inside ``inference_mode``."""
    return getattr(t, "_sf_inference", False)


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
    """``no_grad`` plus the inference-mode flag (``is_inference_mode_enabled()``); tensors ops
    make inside report ``is_inference()`` True. As in PyTorch, ``inference_mode(False)`` turns
    grad mode *on* and inference mode off inside the block. Unlike torch, inference tensors are
    ordinary tensors otherwise (no error when one is saved for backward or changed in place
    outside the block), and tensors made by factory functions (``zeros``, ``tensor``) inside the
    block are not marked: only op results are."""

    def __enter__(self):
        self._prev_inference = _state.inference
        _set_inference(not self.mode)
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        _set_inference(self._prev_inference)
        return False

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


# ----------------------------------------------------------------------------- engine switches
# torch.autograd's process-wide engine switches. shardflow's engine runs a backward pass in the
# calling thread and replays no views, so these are recorded and reported, and change nothing.
_multithreading = [True]


def is_multithreading_enabled() -> bool:
    """torch.autograd.is_multithreading_enabled (default True; see the note above)."""
    return _multithreading[0]


class set_multithreading_enabled(_GradModeContext):
    """torch.autograd.set_multithreading_enabled(mode): sets the switch on construction; as a
    context manager or decorator, restores it after."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev_mt = _multithreading[0]
        _multithreading[0] = self.mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _multithreading[0] = self._prev_mt
        return False

    def clone(self):
        return self.__class__(self.mode)


def is_view_replay_enabled() -> bool:
    """torch.autograd.is_view_replay_enabled: False (shardflow replays no views)."""
    return False
