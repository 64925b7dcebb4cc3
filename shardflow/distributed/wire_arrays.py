"""Arrays on the wire, shared by the parameter server (``ps/wire.py``) and RPC
(``rpc/frame.py``): an array travels as its raw C-contiguous bytes described by a dtype
*name* from a fixed list and a shape. Receiving never evaluates anything from the peer: a
dtype outside ``DTYPES`` or a size that does not match the bytes is refused.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

__all__ = ["DTYPES", "WireFormatError", "wire_dtype", "array_from_buffer"]

# name -> dtype of every array kind either protocol carries (no object, no void, no strings)
DTYPES = {name: np.dtype(name) for name in (
    "float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")}
DTYPES["bfloat16"] = np.dtype(ml_dtypes.bfloat16)


class WireFormatError(ValueError):
    """A peer sent bytes that do not describe an allowed array (or message)."""


_NAMES = {dt: name for name, dt in DTYPES.items()}


def wire_dtype(arr) -> str:
    """The wire name of ``arr``'s dtype; TypeError (before anything is sent) if not allowed."""
    name = _NAMES.get(arr.dtype)
    if name is None:
        raise TypeError(f"cannot send dtype {arr.dtype.name}; expected one of {tuple(DTYPES)}")
    return name


def array_from_buffer(buffer, dtype: str, shape, what: str = "message") -> np.ndarray:
    """The array of ``dtype`` (a wire name) and ``shape`` viewing ``buffer`` (no copy);
    WireFormatError when the name is unknown or the sizes disagree."""
    if dtype not in DTYPES:
        raise WireFormatError(f"unknown dtype {dtype!r} in a {what}")
    try:
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise WireFormatError(f"malformed shape {shape!r} in a {what}") from None
    if any(d < 0 for d in shape):
        raise WireFormatError(f"negative dimension in shape {shape} in a {what}")
    dt = DTYPES[dtype]
    count = math.prod(shape)
    nbytes = memoryview(buffer).nbytes
    if count * dt.itemsize != nbytes:
        raise WireFormatError(
            f"array of dtype {dtype} and shape {shape} needs {count * dt.itemsize} bytes, "
            f"the {what} carries {nbytes}")
    return np.frombuffer(buffer, dtype=dt, count=count).reshape(shape)
