"""``torch._C``: the handful of PyTorch's C++-binding names that Python programs call directly.

PyTorch's ``torch._C`` is its C++ extension; shardflow has none. Programs reach into it for a
few switches and queries, which are given here with PyTorch's results on a CPU build:
``_get_tracing_state()`` (None: no ``torch.jit.trace`` in progress), ``_set_grad_enabled``,
``_log_api_usage_once`` (usage logging: nothing to log), the TorchScript fuser switches of old
training scripts (``_jit_set_profiling_executor``/``_mode`` return the previous setting, True;
the ``_jit_override_can_fuse_*`` and ``_jit_set_*_enabled`` ones return None: shardflow has no
TorchScript fuser to switch), ``_get_cudnn_enabled``, ``Generator`` and ``default_generator``,
and ``_disabled_torch_function_impl`` for Tensor subclasses. Any other name raises an
``AttributeError`` that says so.
"""

from __future__ import annotations

from .autograd import grad_mode as _grad_mode
from .backend.random import Generator, default_generator  # noqa: F401

_jit_flags = {"profiling_executor": True, "profiling_mode": True}


def _get_tracing_state():
    """None: no ``torch.jit.trace`` is recording (shardflow's tracer is not TorchScript's)."""
    return None


def _set_grad_enabled(mode: bool) -> None:
    _grad_mode.set_grad_enabled(mode)


def _is_grad_enabled() -> bool:
    return _grad_mode.is_grad_enabled()


def _log_api_usage_once(event: str) -> None:
    """PyTorch's API-usage logging hook: nothing is logged."""


def _jit_set_profiling_executor(enabled: bool) -> bool:
    """Returns the previous setting, as PyTorch; no TorchScript executor here."""
    previous, _jit_flags["profiling_executor"] = _jit_flags["profiling_executor"], bool(enabled)
    return previous


def _jit_set_profiling_mode(enabled: bool) -> bool:
    previous, _jit_flags["profiling_mode"] = _jit_flags["profiling_mode"], bool(enabled)
    return previous


def _jit_fuser_switch(enabled: bool) -> None:
    """A TorchScript fuser switch: shardflow has no TorchScript fuser."""


_jit_override_can_fuse_on_cpu = _jit_fuser_switch
_jit_override_can_fuse_on_gpu = _jit_fuser_switch
_jit_set_texpr_fuser_enabled = _jit_fuser_switch
_jit_set_nvfuser_enabled = _jit_fuser_switch


def _get_cudnn_enabled() -> bool:
    from .backends import cudnn

    return bool(cudnn.enabled)


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """A Tensor subclass's ``__torch_function__ = torch._C._disabled_torch_function_impl``:
    run ``func`` as is."""
    return func(*args, **(kwargs or {}))


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(
        f"module 'torch._C' has no attribute '{name}': torch._C is PyTorch's C++ extension, and "
        "shardflow has only the few names Python programs call (see shardflow/_C.py); use the "
        "public API instead")
