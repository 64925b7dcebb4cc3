"""``torch.xpu``: Intel's GPU backend, which shardflow does not have; the answers of a
PyTorch build without XPU, so that device-choosing scripts (pytorch/examples'
``use_xpu = not args.no_xpu and torch.xpu.is_available()``) run on the CPU.

``is_available()`` False, ``device_count()`` 0, ``is_initialized()`` False; the calls that
need a device (``current_device``, ``set_device``, ``synchronize``, ``get_device_name``,
``get_device_capability``, ``get_device_properties``) raise an ``AssertionError``, as a
PyTorch without XPU does ("Torch not compiled with XPU enabled"), saying how to run on the
CPU instead. Nothing else of ``torch.xpu`` is provided (an ``AttributeError``).
"""

from __future__ import annotations

__all__ = ["current_device", "device_count", "get_device_capability", "get_device_name",
           "get_device_properties", "is_available", "is_initialized", "set_device", "synchronize"]


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def _no_xpu(what: str):
    raise AssertionError(f"shardflow.xpu.{what} needs an Intel XPU device, and shardflow has no XPU backend "
                         "(its devices are the CPU and CUDA). Guard the call with shardflow.xpu.is_available() "
                         "and run on device='cpu'.")


def current_device() -> int:
    _no_xpu("current_device()")


def set_device(device) -> None:
    _no_xpu("set_device()")


def synchronize(device=None) -> None:
    _no_xpu("synchronize()")


def get_device_name(device=None) -> str:
    _no_xpu("get_device_name()")


def get_device_capability(device=None):
    _no_xpu("get_device_capability()")


def get_device_properties(device=None):
    _no_xpu("get_device_properties()")
