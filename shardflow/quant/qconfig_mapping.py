"""``QConfigMapping`` and ``get_default_qconfig_mapping`` / ``get_default_qat_qconfig_mapping``
(``torch.ao.quantization``): which qconfig each part of a model gets, the argument of FX
graph mode's ``prepare_fx`` / ``prepare_qat_fx``.

shardflow refuses FX graph mode quantization (``quantize_fx``), but a program builds the
mapping before it calls those, so the mapping exists with torch's setters, its
``to_dict`` / ``from_dict`` and its printout. The default mappings hold only the global
qconfig (``get_default_qconfig(backend)`` / ``get_default_qat_qconfig(backend)``); torch's
also list fixed-qparams qconfigs for ops such as sigmoid and tanh, which only FX uses.
"""

from __future__ import annotations

from collections import OrderedDict

from .qconfig import get_default_qat_qconfig, get_default_qconfig

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]

_KEYS = (("global_qconfig", ""), ("object_type_qconfigs", "object_type"),
         ("module_name_regex_qconfigs", "module_name_regex"), ("module_name_qconfigs", "module_name"),
         ("module_name_object_type_order_qconfigs", "module_name_object_type_order"))


class QConfigMapping:
    """Global, per-type, per-name-regex, per-name and per-(name, type, index) qconfigs."""

    def __init__(self):
        self.global_qconfig = None
        self.object_type_qconfigs = OrderedDict()
        self.module_name_regex_qconfigs = OrderedDict()
        self.module_name_qconfigs = OrderedDict()
        self.module_name_object_type_order_qconfigs = OrderedDict()

    def set_global(self, global_qconfig):
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type, qconfig):
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name_regex(self, module_name_regex: str, qconfig):
        self.module_name_regex_qconfigs[module_name_regex] = qconfig
        return self

    def set_module_name(self, module_name: str, qconfig):
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def set_module_name_object_type_order(self, module_name: str, object_type, index: int, qconfig):
        self.module_name_object_type_order_qconfigs[(module_name, object_type, index)] = qconfig
        return self

    def __repr__(self) -> str:
        out = self.__class__.__name__ + " ("
        for attr, _ in _KEYS:
            out += f"\n {attr}"
            entries = getattr(self, attr)
            if isinstance(entries, OrderedDict) and entries:
                for key, qconfig in entries.items():
                    out += f"\n  {key}: {qconfig}"
            else:
                out += f"\n  {entries}"
        return out + "\n)"

    def to_dict(self) -> dict:
        return {
            "": self.global_qconfig,
            "object_type": list(self.object_type_qconfigs.items()),
            "module_name_regex": list(self.module_name_regex_qconfigs.items()),
            "module_name": list(self.module_name_qconfigs.items()),
            "module_name_object_type_order": [(*k, v) for k, v in self.module_name_object_type_order_qconfigs.items()],
        }

    @classmethod
    def from_dict(cls, qconfig_dict: dict) -> QConfigMapping:
        m = cls()
        if "" in qconfig_dict:
            m.set_global(qconfig_dict[""])
        for object_type, qconfig in qconfig_dict.get("object_type", []):
            m.set_object_type(object_type, qconfig)
        for regex, qconfig in qconfig_dict.get("module_name_regex", []):
            m.set_module_name_regex(regex, qconfig)
        for name, qconfig in qconfig_dict.get("module_name", []):
            m.set_module_name(name, qconfig)
        for name, object_type, index, qconfig in qconfig_dict.get("module_name_object_type_order", []):
            m.set_module_name_object_type_order(name, object_type, index, qconfig)
        return m


def get_default_qconfig_mapping(backend: str = "x86", version: int = 0) -> QConfigMapping:
    """A mapping whose global qconfig is ``get_default_qconfig(backend, version)``."""
    return QConfigMapping().set_global(get_default_qconfig(backend, version))


def get_default_qat_qconfig_mapping(backend: str = "x86", version: int = 1) -> QConfigMapping:
    """A mapping whose global qconfig is ``get_default_qat_qconfig(backend, version)``."""
    return QConfigMapping().set_global(get_default_qat_qconfig(backend, version))
