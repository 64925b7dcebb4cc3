"""dtypes: PyTorch-named dtype objects over NumPy dtypes, and PyTorch's promotion rules.

A ``shardflow.dtype`` wraps one NumPy dtype (bfloat16 comes from ml_dtypes). Promotion
follows PyTorch, not NumPy: categories bool < integer < floating; within the highest
category present, dimensioned tensors decide over zero-dim tensors, which decide over
Python scalars; a Python float with an integer tensor gives the default float dtype.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


class dtype:
    """A tensor element type, named as in PyTorch (``shardflow.float32`` ...)."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_category")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = category == 2
        self.is_signed = name not in ("bool", "uint8")
        self.itemsize = self.np.itemsize
        self._category = category

    @property
    def is_complex(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"shardflow.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(
    {"bool": bool_, "half": float16, "float": float32, "double": float64, "long": int64,
     "int": int32, "short": int16}
)

# default dtypes: float32 for floats (settable like torch.set_default_dtype), int64 for ints
_default_float = [float32]


def get_default_dtype() -> dtype:
    return _default_float[0]


def set_default_dtype(d) -> None:
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype expects a floating dtype, got {d}")
    _default_float[0] = d


def as_dtype(d) -> dtype:
    """Accept a shardflow dtype, a NumPy dtype / type, a name, or a Python type."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return get_default_dtype()
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(getattr(d, "dtype", None), dtype) and isinstance(d, type):
        return d.dtype  # a legacy tensor type (FloatTensor: autograd/legacy_types.py)
    if isinstance(d, str):
        try:
            return _BY_NAME[d.removeprefix("torch.").removeprefix("shardflow.")]
        except KeyError:
            raise TypeError(f"unknown dtype name {d!r}; expected one of {sorted(_BY_NAME)}") from None
    try:
        return _BY_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(
            f"unsupported dtype {d!r}; expected one of "
            + ", ".join(x.name for x in ALL)
        ) from None


def from_numpy_dtype(npd) -> dtype:
    try:
        return _BY_NP[npd]
    except KeyError:
        return as_dtype(npd)


# Promotion lattice inside a category (PyTorch): uint8/int8 -> int16; float16/bfloat16 -> float32
_INT_ORDER = {bool_: 0, uint8: 1, int8: 1, int16: 2, int32: 3, int64: 4}
_FLOAT_ORDER = {float16: 1, bfloat16: 1, float32: 2, float64: 3}


def _promote_same_category(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.is_floating_point:
        oa, ob = _FLOAT_ORDER[a], _FLOAT_ORDER[b]
        if oa == ob:  # float16 with bfloat16
            return float32
        return a if oa > ob else b
    if {a, b} == {uint8, int8}:
        return int16
    return a if _INT_ORDER[a] >= _INT_ORDER[b] else b


def promote_types(a, b) -> dtype:
    """``torch.promote_types``: the smallest dtype both can be cast to."""
    a, b = as_dtype(a), as_dtype(b)
    if a._category != b._category:
        return a if a._category > b._category else b
    return _promote_same_category(a, b)


def scalar_category(value) -> int:
    if isinstance(value, bool | np.bool_):
        return 0
    if isinstance(value, int | np.integer):
        return 1
    return 2


def result_type(operands) -> dtype:
    """PyTorch's result dtype for operands given as (dtype, ndim) pairs or Python scalars.

    Tensors with ndim > 0 outrank zero-dim tensors, which outrank Python scalars, but a
    higher category always wins, taking the default dtype of that category when it comes
    from a scalar.
    """
    dim_t = zero_t = None
    scalar_cat = -1
    for op in operands:
        if isinstance(op, tuple):
            d, ndim = op
            if ndim > 0:
                dim_t = d if dim_t is None else promote_types(dim_t, d)
            else:
                zero_t = d if zero_t is None else promote_types(zero_t, d)
        else:
            scalar_cat = max(scalar_cat, scalar_category(op))
    result = dim_t
    if zero_t is not None:
        if result is None or zero_t._category > result._category:
            result = zero_t
    if scalar_cat >= 0:
        if result is None or scalar_cat > result._category:
            result = (bool_, int64, get_default_dtype())[scalar_cat]
    return result
