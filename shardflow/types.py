"""``torch.types``: the type aliases annotations name (``Number``, ``Device``, ``_dtype`` ...).

Each alias is PyTorch's with shardflow's classes in place of torch's. Symbolic shapes do not
exist here (no ``torch.export``), so the ``*LikeType`` aliases are the plain Python types and
``py_sym_types`` is empty (``isinstance(x, py_sym_types)`` is False); ``SymInt`` / ``SymFloat`` /
``SymBool`` / ``Storage`` / ``DispatchKey`` are absent (docs/COMPAT.md, gap list).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO, Any, TypeAlias

from .autograd.tensor import Size, Tensor
from .backend.device import device as _device_cls
from .backend.dtypes import dtype as _dtype_cls
from .backend.layout import layout as _layout_cls

__all__ = ["Number", "Device", "FileLike", "IntLikeType", "FloatLikeType", "BoolLikeType",
           "PySymType", "py_sym_types", "Size", "Tensor"]

_bool = bool
_bytes = bytes
_complex = complex
_float = float
_int = int
_str = str
_device = _device_cls
_dtype = _dtype_cls
_layout = _layout_cls
_size: TypeAlias = Size | list[int] | tuple[int, ...]
_symsize: TypeAlias = Size | Sequence[int]
_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]
_Number = (int, float, bool)

Number: TypeAlias = int | float | bool
Device: TypeAlias = _device_cls | str | int | None
FileLike: TypeAlias = str | os.PathLike | IO[bytes]
IntLikeType: TypeAlias = int
FloatLikeType: TypeAlias = float
BoolLikeType: TypeAlias = bool
PySymType: TypeAlias = Any
py_sym_types: tuple = ()
