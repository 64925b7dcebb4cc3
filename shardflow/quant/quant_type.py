"""``QuantType`` (torch.ao.quantization.quant_type): the kind of quantization a module gets."""

from __future__ import annotations

import enum

__all__ = ["QuantType"]


class QuantType(enum.IntEnum):
    """torch's values: DYNAMIC 0, STATIC 1, QAT 2, WEIGHT_ONLY 3."""

    DYNAMIC = 0
    STATIC = 1
    QAT = 2
    WEIGHT_ONLY = 3
