"""``torch.nn.utils.skip_init``: build a module without running its parameter
initialisation (on the meta device, then ``to_empty``): parameters hold uninitialised
memory, to be filled by the caller (e.g. from a checkpoint)."""

from __future__ import annotations

import inspect

from ..module import Module


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialised parameters on ``device`` (default
    CPU). The class must accept a ``device`` argument, as PyTorch requires."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)


__all__ = ["skip_init"]
