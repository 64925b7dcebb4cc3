"""``torch.backends.quantized``: ``engine`` (read and assigned: ``torch.backends.quantized.engine
= "qnnpack"``, as quantization tutorials do) and ``supported_engines``.

The engine decides the numerics of shardflow's int8 layers (``shardflow.quant.engine``: with
``x86`` / ``fbgemm`` / ``onednn`` dynamic Linear quantizes activations with ``reduce_range``,
with ``qnnpack`` over the full 0..255); the setting lives here, in the lowest layer that both
``torch.backends`` and the quant layer reach, so assigning it here is the same as
``shardflow.ao.quantization.set_engine``. An assignment is checked as torch checks it (its
RuntimeErrors); ``supported_engines`` is torch's list on an x86 CPU build and cannot be
assigned. As in torch, the module's class makes ``engine`` a property (a module attribute
cannot check an assignment otherwise).
"""

from __future__ import annotations

import sys
import types

__all__ = ["get_engine", "set_engine"]  # and the properties engine, supported_engines (see _QuantizedModule)

_ENGINES = ("qnnpack", "onednn", "x86", "fbgemm")  # torch's order
_state = {"engine": "x86"}


def set_engine(value) -> None:
    """Set the engine, with torch's errors for a name it does not know or ``"none"``."""
    if value in (None, "", "none"):
        raise RuntimeError("quantized engine NoQEngine is not supported (choose one of "
                           f"{', '.join(_ENGINES)})")
    if value not in _ENGINES:
        raise RuntimeError(f"{value} is not a valid value for quantized engine (choose one of {', '.join(_ENGINES)})")
    _state["engine"] = value


def get_engine() -> str:
    return _state["engine"]


class _QuantizedModule(types.ModuleType):
    @property
    def engine(self) -> str:
        return _state["engine"]

    @engine.setter
    def engine(self, value) -> None:
        set_engine(value)

    @property
    def supported_engines(self) -> list[str]:
        return list(_ENGINES)

    @supported_engines.setter
    def supported_engines(self, value) -> None:
        raise RuntimeError("Assignment not supported")


sys.modules[__name__].__class__ = _QuantizedModule
