"""``torch.finfo`` / ``torch.iinfo``, the ``strided`` layout (from ``layout.py``) and the math constants
(``pi``, ``e``, ``inf``, ``nan``, ``newaxis``), with PyTorch's names and values.

``finfo(dtype)`` (default: the default dtype) reports ``bits``, ``eps``, ``max``, ``min``,
``tiny`` (= ``smallest_normal``), ``resolution`` and ``dtype`` (a string, as PyTorch's);
``iinfo`` reports ``bits``, ``max``, ``min``, ``dtype``. Values come from NumPy's
``finfo``/``iinfo`` (bfloat16 from ml_dtypes).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from . import dtypes

__all__ = ["finfo", "iinfo", "layout", "strided", "pi", "e", "inf", "nan", "newaxis"]

from .layout import layout, strided  # noqa: E402 - re-exported under the names torch has

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


class finfo:
    """Machine limits of a floating dtype: ``finfo(shardflow.float16).max`` ..."""

    def __init__(self, type=None):
        d = dtypes.get_default_dtype() if type is None else dtypes.as_dtype(type)
        if not d.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle '{d}'")
        info = np.finfo(d.np) if d.np in (np.float16, np.float32, np.float64) else ml_dtypes.finfo(d.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # as PyTorch: 10^-digits, a Python float
        if d.itemsize == 1:  # float8: torch's numeric_limits (ml_dtypes differs on these)
            self.resolution = 1.0
            if d.name == "float8_e5m2fnuz":
                self.eps = 0.125
        self.dtype = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: ``iinfo(shardflow.int64).max`` ..."""

    def __init__(self, type):
        d = dtypes.as_dtype(type)
        if d.is_floating_point:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to handle '{d}'")
        info = np.iinfo(np.uint8 if d.name == "bool" else d.np)
        self.bits = 8 if d.name == "bool" else int(info.bits)
        self.max = 1 if d.name == "bool" else int(info.max)
        self.min = 0 if d.name == "bool" else int(info.min)
        self.dtype = d.name

    def __repr__(self) -> str:
        # torch prints the limits as C's %g (6 significant digits): int32's max is 2.14748e+09
        return f"iinfo(min={float(self.min):g}, max={float(self.max):g}, dtype={self.dtype})"
