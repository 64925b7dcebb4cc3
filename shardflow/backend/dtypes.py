"""dtypes: PyTorch-named dtype objects over NumPy dtypes, and PyTorch's promotion rules.

A ``shardflow.dtype`` wraps one NumPy dtype (bfloat16 comes from ml_dtypes). Promotion
follows PyTorch, not NumPy: categories bool < integer < floating < complex; within the
highest category present, dimensioned tensors decide over zero-dim tensors, which decide over
Python scalars; a Python float with an integer tensor gives the default float dtype, a Python
complex with a real tensor the complex dtype of matching precision (complex64 for float32
and below, complex128 for float64; the default complex dtype follows the default float).
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
        self.is_signed = name not in ("bool", "uint8", "uint16", "uint32", "uint64")
        self.itemsize = self.np.itemsize
        self._category = category

    @property
    def is_complex(self) -> bool:
        return self._category == 3

    def to_complex(self) -> dtype:
        """``torch.dtype.to_complex``: the complex dtype of this floating precision."""
        return _TO_COMPLEX.get(self, self) if self._category >= 2 else self

    def to_real(self) -> dtype:
        """``torch.dtype.to_real``: the real dtype of a complex one (itself otherwise)."""
        return _TO_REAL.get(self, self)

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
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)
# Limited dtypes (torch 2.13 has few kernels for them): promotion with any other dtype of
# their kind is refused (``promote_types``), as in torch.
uint16 = dtype("uint16", np.uint16, 1)
uint32 = dtype("uint32", np.uint32, 1)
uint64 = dtype("uint64", np.uint64, 1)
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 2)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, 2)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 2)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 2)
_BARE_UINTS = (uint16, uint32, uint64)
_FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz)
_LIMITED = frozenset(_BARE_UINTS + _FLOAT8)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
       complex128, *_BARE_UINTS, *_FLOAT8)
_TO_COMPLEX = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}
_TO_REAL = {complex64: float32, complex128: float64}
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(
    {"bool": bool_, "half": float16, "float": float32, "double": float64, "long": int64,
     "int": int32, "short": int16, "cfloat": complex64, "cdouble": complex128}
)

# default dtypes: float32 for floats (settable like torch.set_default_dtype), int64 for ints
_default_float = [float32]


def get_default_dtype() -> dtype:
    return _default_float[0]


def get_default_complex_dtype() -> dtype:
    """complex128 when the default float dtype is float64, else complex64 (PyTorch's rule)."""
    return complex128 if _default_float[0] is float64 else complex64


def set_default_dtype(d) -> None:
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype expects a floating dtype, got {d}")
    _default_float[0] = d


def as_dtype(d) -> dtype:
    """Accept a shardflow dtype, a NumPy dtype / type, a name, or a Python type."""
    if isinstance(d, dtype):
        return d
    # Python's types name PyTorch's double-precision dtypes whatever the default dtype
    # (``torch.zeros(3, dtype=float)`` is float64)
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return complex128
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
    if a.is_complex:
        return complex128 if complex128 in (a, b) else complex64
    if a.is_floating_point:
        oa, ob = _FLOAT_ORDER[a], _FLOAT_ORDER[b]
        if oa == ob:  # float16 with bfloat16
            return float32
        return a if oa > ob else b
    if {a, b} == {uint8, int8}:
        return int16
    return a if _INT_ORDER[a] >= _INT_ORDER[b] else b


# torch's ScalarType names, which its promotion errors use
_SCALAR_TYPE_NAMES = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
    "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble", "uint16": "UInt16", "uint32": "UInt32",
    "uint64": "UInt64", "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
    "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz"}


def _check_limited_promotion(a: dtype, b: dtype) -> None:
    """torch refuses to promote float8 with anything else, and uint16/32/64 with anything but
    a (non-float8) floating dtype."""
    names = f"attempted to promote {_SCALAR_TYPE_NAMES[a.name]} and {_SCALAR_TYPE_NAMES[b.name]}"
    if a in _FLOAT8 or b in _FLOAT8:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, {names}")
    if (a in _BARE_UINTS and not b.is_floating_point) or (b in _BARE_UINTS and not a.is_floating_point):
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, {names}")


def promote_types(type1, type2) -> dtype:
    """``torch.promote_types``: the smallest dtype both can be cast to."""
    a, b = as_dtype(type1), as_dtype(type2)
    if a is b:
        return a
    if a in _LIMITED or b in _LIMITED:
        _check_limited_promotion(a, b)
    if a._category != b._category:
        hi, lo = (a, b) if a._category > b._category else (b, a)
        if hi is complex64 and lo is float64:  # the precision of the float survives
            return complex128
        return hi
    return _promote_same_category(a, b)


def scalar_category(value) -> int:
    if isinstance(value, bool | np.bool_):
        return 0
    if isinstance(value, int | np.integer):
        return 1
    if isinstance(value, complex | np.complexfloating):
        return 3
    return 2


def _combine_categories(higher, lower):
    """PyTorch's ``combine_categories``: ``higher`` (dimensioned tensors, or zero-dim ones
    against scalars) decides unless ``lower`` is of a higher category; a complex ``lower``
    makes a floating ``higher`` complex at its own precision."""
    if higher is None:
        return lower
    if lower is None or higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def result_type(operands) -> dtype:
    """PyTorch's result dtype for operands given as (dtype, ndim) pairs or Python scalars.

    Tensors with ndim > 0 outrank zero-dim tensors, which outrank Python scalars, but a
    higher category always wins (``_combine_categories``), taking the default dtype of that
    category when it comes from a scalar.
    """
    dim_t = zero_t = scalar_t = None
    for op in operands:
        if isinstance(op, tuple):
            d, ndim = op
            if ndim > 0:
                dim_t = d if dim_t is None else promote_types(dim_t, d)
            else:
                zero_t = d if zero_t is None else promote_types(zero_t, d)
        else:
            cat = scalar_category(op)
            d = (bool_, int64, get_default_dtype(), get_default_complex_dtype())[cat]
            scalar_t = d if scalar_t is None else promote_types(scalar_t, d)
    return _combine_categories(dim_t, _combine_categories(zero_t, scalar_t))


# float8_e4m3fn has no infinity: torch's conversion saturates at +-448 (NaN stays NaN); the
# other float8 formats convert as ml_dtypes does (checked bit for bit against torch's .to()).
_SATURATE = {float8_e4m3fn: 448.0}


def cast(array, d):
    """``array`` converted to dtype ``d`` with torch's conversion rules (``_SATURATE``)."""
    d = as_dtype(d)
    limit = _SATURATE.get(d)
    if limit is not None and array.dtype.kind in "fVbiu" and array.dtype != d.np:
        wide = array.astype(np.float64 if array.dtype.itemsize >= 8 else np.float32)
        array = np.where(np.isnan(wide), wide, np.clip(wide, -limit, limit))
    return array.astype(d.np)


class _StoragelessDtype(dtype):
    """A torch 2.13 dtype name that shardflow cannot hold in a tensor: ``complex32``
    (``chalf``), the sub-byte ``uint1..7`` / ``int1..7``, the ``bits*`` types,
    ``float8_e8m0fnu`` and ``float4_e2m1fn_x2``. It exists so that annotations, dtype tables
    and ``x.dtype == torch.uint4`` checks run; its flags answer as torch's, and anything that
    needs its storage (``zeros(..., dtype=)``, ``.to()``) raises NotImplementedError naming
    a dtype to use instead. (ml_dtypes could hold complex32, int1/2/4, uint1/2/4,
    float8_e8m0fnu and float4 elements, but shardflow has no kernels or conversions for them.)
    """

    __slots__ = ("_instead", "_signed")

    def __init__(self, name, category, itemsize, signed, instead):
        self.name, self._category, self.itemsize, self._instead = name, category, itemsize, instead
        self.is_floating_point = category == 2
        self._signed = signed

    @property
    def is_signed(self) -> bool:
        if self._signed is None:  # torch's bits types: opaque bit containers
            raise RuntimeError(f"Bits types are undefined: {self.name} has no sign; view the data as "
                               f"{self._instead} to read it as numbers")
        return self._signed

    @property
    def np(self):
        raise NotImplementedError(
            f"shardflow has no storage for dtype {self.name} (torch 2.13 has few kernels for it either): "
            f"expected a dtype a tensor can hold; use {self._instead} instead")


def _storageless(name, category, itemsize, signed, instead):
    return _StoragelessDtype(name, category, itemsize, signed, instead)


complex32 = _storageless("complex32", 3, 4, True, "complex64")
float8_e8m0fnu = _storageless("float8_e8m0fnu", 2, 1, False, "float8_e5m2 or float16")
float4_e2m1fn_x2 = _storageless("float4_e2m1fn_x2", 2, 1, True, "float8_e4m3fn or float16")
_SUB_BYTE = {f"uint{k}": _storageless(f"uint{k}", 1, 1, False, "uint8") for k in range(1, 8)}
_SUB_BYTE.update({f"int{k}": _storageless(f"int{k}", 1, 1, True, "int8") for k in range(1, 8)})
_BITS = {n: _storageless(n, 1, size, None, f"uint{8 * size}")
         for n, size in (("bits1x8", 1), ("bits2x4", 1), ("bits4x2", 1), ("bits8", 1), ("bits16", 2))}
STORAGELESS = (complex32, float8_e8m0fnu, float4_e2m1fn_x2, *_SUB_BYTE.values(), *_BITS.values())
_BY_NAME.update({d.name: d for d in STORAGELESS})
_BY_NAME["chalf"] = complex32
uint1, uint2, uint3, uint4, uint5, uint6, uint7 = (_SUB_BYTE[f"uint{k}"] for k in range(1, 8))
int1, int2, int3, int4, int5, int6, int7 = (_SUB_BYTE[f"int{k}"] for k in range(1, 8))
bits1x8, bits2x4, bits4x2, bits8, bits16 = _BITS.values()
