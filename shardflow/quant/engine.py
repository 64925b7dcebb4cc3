"""The quantized engine whose numerics the int8 layers follow (``torch.backends.quantized.engine``).

``x86`` / ``fbgemm`` / ``onednn`` (default ``x86``): dynamic Linear quantizes activations
with ``reduce_range`` (uint8 values 0..127), as FBGEMM does to keep its int16 intermediate
sums from saturating on CPUs without VNNI; ``qnnpack``: the full 0..255 range. The setting
is ``torch.backends.quantized.engine`` (``backends/quantized.py``).
"""

from __future__ import annotations

from ..backends import quantized as _quantized

__all__ = ["get_engine", "set_engine", "supported_engines", "activation_reduce_range"]

supported_engines = ("x86", "fbgemm", "onednn", "qnnpack")


def set_engine(name: str) -> None:
    """The same setting as ``torch.backends.quantized.engine = name`` (kept in
    ``backends/quantized.py``, which both paths reach)."""
    if name not in supported_engines:
        raise ValueError(f"quantized engine must be one of {', '.join(supported_engines)}, got {name!r}")
    _quantized.set_engine(name)


def get_engine() -> str:
    return _quantized.get_engine()


def activation_reduce_range() -> bool:
    return _quantized.get_engine() != "qnnpack"
