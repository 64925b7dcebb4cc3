"""``QConfig``: which observer (or fake-quant) makes the activation and the weight qparams of
a module, with PyTorch's named defaults.

| name | activation | weight |
|---|---|---|
| ``default_qconfig`` | MinMax, quint8 0..127 | MinMax, qint8 symmetric per tensor |
| ``get_default_qconfig('x86'/'fbgemm')`` | Histogram, quint8 reduce_range (0..127) | PerChannelMinMax, qint8 symmetric |
| ``get_default_qconfig('qnnpack')`` | Histogram, quint8 0..255 | MinMax, qint8 symmetric per tensor |
| ``default_dynamic_qconfig`` | placeholder (per batch, at run time) | MinMax, qint8 symmetric per tensor |
| ``per_channel_dynamic_qconfig`` | placeholder | PerChannelMinMax, qint8 symmetric |
| ``default_qat_qconfig`` | FakeQuantize(MovingAverageMinMax, 0..255 reduce_range) | FakeQuantize(MovingAverageMinMax, qint8 symmetric) |
| ``get_default_qat_qconfig('x86'/'fbgemm')`` | Fused(MovingAverageMinMax, 0..255 reduce_range) | Fused(MovingAveragePerChannelMinMax, qint8 symmetric) |
| ``get_default_qat_qconfig('qnnpack')`` | Fused(MovingAverageMinMax, 0..255) | Fused(MovingAverageMinMax, qint8 symmetric) |

Fused = ``FusedMovingAvgObsFakeQuantize`` (training-time qparams from FBGEMM's formula).

"""

from __future__ import annotations

from collections import namedtuple

from ..nn.module import Module
from .fake_quantize import (
    FusedMovingAvgObsFakeQuantize,
    default_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_weight_fake_quant,
)
from .histogram import HistogramObserver
from .observer import (
    MovingAverageMinMaxObserver,
    default_dynamic_quant_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)

__all__ = [
    "QConfig", "QConfigDynamic", "default_qconfig", "default_dynamic_qconfig",
    "per_channel_dynamic_qconfig", "default_per_channel_qconfig", "default_qat_qconfig",
    "get_default_qconfig", "get_default_qat_qconfig",
]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Factories (classes or ``Observer.with_args(...)``) for the activation and weight
    observers; each module prepared with it gets fresh instances."""

    def __new__(cls, activation, weight):
        for name, f in (("activation", activation), ("weight", weight)):
            if isinstance(f, Module) or not callable(f):
                raise ValueError(
                    f"QConfig received an observer instance for {name}, please pass the observer "
                    "class (or Observer.with_args(...)) instead"
                )
        return super().__new__(cls, activation, weight)


QConfigDynamic = QConfig

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_per_channel_qconfig = QConfig(activation=default_observer,
                                      weight=default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)

_ENGINES = ("x86", "fbgemm", "onednn", "qnnpack")


def _check_backend(backend):
    if backend not in _ENGINES:
        raise ValueError(f"backend must be one of {', '.join(_ENGINES)}, got {backend!r}")


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """The post-training static qconfig for ``backend`` (see the table in the module docstring)."""
    _check_backend(backend)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                       weight=default_weight_observer)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                   weight=default_per_channel_weight_observer)


# torch's QAT activation factory, written out (not default_fused_act_fake_quant: its dtype
# keyword would show in the printed qconfig, where torch's has none)
_QAT_ACT = FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """The quantization-aware-training qconfig for ``backend``."""
    _check_backend(backend)
    if backend == "qnnpack":
        return QConfig(activation=_QAT_ACT.with_args(reduce_range=False),
                       weight=default_fused_wt_fake_quant)
    return QConfig(activation=_QAT_ACT.with_args(reduce_range=True),
                   weight=default_fused_per_channel_wt_fake_quant)
