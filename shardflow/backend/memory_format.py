"""Memory formats: ``shardflow.contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format`` (PyTorch's ``torch.memory_format`` values).

They are accepted wherever PyTorch takes ``memory_format=`` (``contiguous``, ``clone``,
``to``, ``empty_like`` ...) and never change a value. shardflow's kernels work on
row-major (NCHW) arrays, so results are laid out row-major whatever format is asked for;
only speed could differ, and NumPy's convolutions do not gain from NHWC.
"""

from __future__ import annotations

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


class memory_format:
    """A named memory layout (compared by identity, printed as PyTorch prints it)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"shardflow.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module attribute, so identity survives


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
