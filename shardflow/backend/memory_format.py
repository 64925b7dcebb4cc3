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


_RANK = {"channels_last": 4, "channels_last_3d": 5}


def check_memory_format(op: str, fmt, ndim: int | None = None) -> None:
    """Raise torch's errors for a ``memory_format=`` argument ``op`` cannot take: a value that
    is not a ``memory_format`` (TypeError), or ``channels_last`` / ``channels_last_3d`` for a
    tensor of ``ndim`` other than 4 / 5 (RuntimeError). ``None`` passes. Any other format is
    honoured as this module's docstring says: the values stay row-major."""
    if fmt is None:
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")
    rank = _RANK.get(fmt.name)
    if rank is not None and ndim is not None and ndim != rank:
        raise RuntimeError(f"{op}(memory_format=torch.{fmt.name}): required rank {rank} tensor to use "
                           f"{fmt.name} format, got a {ndim}-d tensor")


__all__ += ["check_memory_format"]
