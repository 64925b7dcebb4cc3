"""Quantized dtypes and quantization schemes, with PyTorch's names.

A quantized dtype (``quint8``, ``qint8``, ``qint32``) names the integer storage (NumPy
``uint8``/``int8``/``int32``) and its full range; a scheme (``per_tensor_affine``,
``per_tensor_symmetric``, ``per_channel_affine``, ``per_channel_symmetric``) says how the
scale and zero point are chosen. The real value of a stored integer ``q`` is
``(q - zero_point) * scale``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "QDtype", "quint8", "qint8", "qint32", "QScheme", "per_tensor_affine", "per_tensor_symmetric",
    "per_channel_affine", "per_channel_symmetric", "as_qdtype",
]


class QDtype:
    """A quantized dtype: storage ``np_dtype`` and the full integer range ``[qmin, qmax]``."""

    __slots__ = ("name", "np_dtype", "qmin", "qmax")

    def __init__(self, name: str, np_dtype, qmin: int, qmax: int):
        self.name, self.np_dtype, self.qmin, self.qmax = name, np.dtype(np_dtype), qmin, qmax

    def __repr__(self) -> str:
        return f"shardflow.{self.name}"

    def __reduce__(self):
        return (as_qdtype, (self.name,))


quint8 = QDtype("quint8", np.uint8, 0, 255)
qint8 = QDtype("qint8", np.int8, -128, 127)
qint32 = QDtype("qint32", np.int32, -(2**31), 2**31 - 1)
_QDTYPES = {d.name: d for d in (quint8, qint8, qint32)}


def as_qdtype(dtype) -> QDtype:
    """``quint8`` / ``"quint8"`` / ``torch.quint8``-like objects -> the QDtype."""
    if isinstance(dtype, QDtype):
        return dtype
    name = str(dtype).rsplit(".", 1)[-1]
    if name in _QDTYPES:
        return _QDTYPES[name]
    raise TypeError(
        f"expected a quantized dtype (quint8, qint8 or qint32), got {dtype!r}; "
        "pass shardflow.ao.quantization.quint8 or qint8"
    )


class QScheme:
    __slots__ = ("name", "per_channel", "symmetric")

    def __init__(self, name: str, per_channel: bool, symmetric: bool):
        self.name, self.per_channel, self.symmetric = name, per_channel, symmetric

    def __repr__(self) -> str:
        return f"shardflow.{self.name}"

    def __reduce__(self):
        return (_scheme, (self.name,))


per_tensor_affine = QScheme("per_tensor_affine", False, False)
per_tensor_symmetric = QScheme("per_tensor_symmetric", False, True)
per_channel_affine = QScheme("per_channel_affine", True, False)
per_channel_symmetric = QScheme("per_channel_symmetric", True, True)
_SCHEMES = {s.name: s for s in (per_tensor_affine, per_tensor_symmetric, per_channel_affine,
                                per_channel_symmetric)}


def _scheme(name) -> QScheme:
    if isinstance(name, QScheme):
        return name
    key = str(name).rsplit(".", 1)[-1]
    if key not in _SCHEMES:
        raise ValueError(f"unknown qscheme {name!r}; expected one of {', '.join(_SCHEMES)}")
    return _SCHEMES[key]
