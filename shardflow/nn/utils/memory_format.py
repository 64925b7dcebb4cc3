"""``torch.nn.utils.convert_conv2d_weight_memory_format`` / ``..._conv3d_...``.

As torch's: every ``Conv2d`` / ``ConvTranspose2d`` (``Conv3d`` / ``ConvTranspose3d``) weight in
``module`` is laid out in ``memory_format`` in place (the same Parameter, its values
unchanged; ``backend/memory_format.py``), and ``module`` itself is returned."""

from __future__ import annotations

from ...backend.memory_format import check_memory_format, in_memory_format
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")


def _check(memory_format) -> None:
    if getattr(memory_format, "name", None) not in _FORMATS:
        raise TypeError(f"memory_format must be a torch.memory_format (e.g. torch.channels_last), "
                        f"got {memory_format!r}")


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        weight = module.weight
        check_memory_format("clone", memory_format, weight.ndim)  # channels_last wants a 4-d weight
        laid = in_memory_format(weight.array, memory_format)
        if laid is not weight.array:
            weight.array = laid
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Lay every 2-d (transposed) convolution's weight out in ``memory_format``, in place;
    returns ``module``."""
    _check(memory_format)
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Lay every 3-d (transposed) convolution's weight out in ``memory_format``, in place;
    returns ``module``."""
    _check(memory_format)
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))


__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]
