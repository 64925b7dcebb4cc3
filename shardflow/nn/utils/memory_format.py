"""``torch.nn.utils.convert_conv2d_weight_memory_format`` / ``..._conv3d_...``.

shardflow keeps every array row-major (NCHW): ``memory_format`` is accepted by
``Tensor.to``/``clone``/``contiguous`` and ``Module.to`` and changes no values or layout
(docs/COMPAT.md, memory formats). These functions do the same for conv weights: they check
the argument and return ``module`` itself, unchanged, as torch returns the module it
converted in place."""

from __future__ import annotations

_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")


def _check(memory_format) -> None:
    if getattr(memory_format, "name", None) not in _FORMATS:
        raise TypeError(f"memory_format must be a torch.memory_format (e.g. torch.channels_last), "
                        f"got {memory_format!r}")


def convert_conv2d_weight_memory_format(module, memory_format):
    """Return ``module`` (conv weights stay row-major; see the module docstring)."""
    _check(memory_format)
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """Return ``module`` (conv weights stay row-major; see the module docstring)."""
    _check(memory_format)
    return module


__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
