"""Memory formats: ``shardflow.contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format`` (PyTorch's ``torch.memory_format`` values).

They are accepted wherever PyTorch takes ``memory_format=`` (``contiguous``, ``clone``,
``to``, ``empty_like`` ...) and never change a value; they change the layout, as torch's:
a channels-last tensor is an array whose memory runs N, H, W, C (``stride()`` prints
torch's ``(H*W*C, 1, W*C, C)``, ``is_contiguous(memory_format=channels_last)`` is True).
``to`` / ``contiguous`` / ``clone`` / ``empty`` / the ``*_like`` factories (whose default,
``preserve_format``, keeps a channels-last input's layout), ``nn.Module.to`` (4-d and 5-d
parameters and buffers) and ``conv2d`` / ``conv3d`` (channels-last output when the input or
the weight is) lay arrays out so; NumPy's elementwise ufuncs keep their inputs' layout
(order "K"), so pointwise ops propagate it. Other ops return row-major (NCHW) arrays where
torch would keep channels-last (pooling, batch norm ...): the values are the same, only
``stride()`` differs. ``preserve_format`` keeps only a channels-last layout; a tensor with
other strides (a transpose) is copied row-major, where torch keeps any dense layout.
"""

from __future__ import annotations

from .layout import NamedConstant
from .xp import get_array_module

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


def _channels_last_order(ndim: int):
    """The axis order (and its inverse) that lists an N, C, spatial... array's axes by its
    channels-last memory order: N, spatial..., C."""
    order = (0, *range(2, ndim), 1)
    inverse = (0, ndim - 1, *range(1, ndim - 1))
    return order, inverse


def is_channels_last(array) -> bool:
    """Whether a 4-d / 5-d array is laid out channels-last and not also row-major (the layout
    ``preserve_format`` keeps; an N1HW array is both and counts as row-major, as torch's
    ``suggest_memory_format``)."""
    if array.ndim not in (4, 5) or not hasattr(array, "flags") or array.flags.c_contiguous:
        return False
    order, _ = _channels_last_order(array.ndim)
    return bool(array.transpose(order).flags.c_contiguous)


def in_memory_format(array, fmt, like=None):
    """``array``'s values laid out in ``fmt`` (a copy only where the layout changes; arrays
    without strides, e.g. meta, come back as they are). ``preserve_format`` (and None) takes
    ``like``'s layout (default: ``array``'s own) when that is channels-last, else row-major."""
    if not hasattr(array, "flags"):
        return array
    name = "preserve_format" if fmt is None else fmt.name
    if name == "preserve_format":
        name = "channels_last" if is_channels_last(array if like is None else like) else "contiguous_format"
    if name in ("channels_last", "channels_last_3d"):
        order, inverse = _channels_last_order(array.ndim)
        moved = array.transpose(order)
        if _row_major_strides(moved):
            return array
        # a fresh row-major N, H, W, C copy: its size-1 axes get strides too, as torch's
        # (an N1HW tensor made channels-last prints (H*W, 1, W, 1))
        return get_array_module(moved).array(moved, copy=True, order="C").transpose(inverse)
    return array if array.flags.c_contiguous else get_array_module(array).ascontiguousarray(array)


def _row_major_strides(array) -> bool:
    """Row-major with every stride as a fresh array has it (size-1 axes included, which
    ``flags.c_contiguous`` ignores)."""
    step = array.itemsize
    for size, stride in zip(reversed(array.shape), reversed(array.strides), strict=True):
        if stride != step:
            return False
        step *= size
    return True


__all__ += ["check_memory_format", "is_channels_last", "in_memory_format"]
