"""Memory formats: ``shardflow.contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format`` (PyTorch's ``torch.memory_format`` values).

They are accepted wherever PyTorch takes ``memory_format=`` (``contiguous``, ``clone``,
``to``, ``empty_like`` ...) and never change a value. shardflow's kernels work on
row-major (NCHW) arrays, so results are laid out row-major whatever format is asked for;
only speed could differ, and NumPy's convolutions do not gain from NHWC.
"""

from __future__ import annotations

from .layout import NamedConstant

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
           "legacy_contiguous_format"]


class memory_format(NamedConstant):
    """A named memory layout."""

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format  # PyTorch's alias: the same object
