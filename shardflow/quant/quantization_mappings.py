"""torch.ao.quantization.quantization_mappings: which quantized module replaces a float one.

``DEFAULT_STATIC_QUANT_MODULE_MAPPINGS`` / ``DEFAULT_QAT_MODULE_MAPPINGS`` /
``DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS`` are the tables ``convert`` / ``prepare_qat`` /
``quantize_dynamic`` use (``quantize.py``'s ``get_default_*`` functions, over the layers
shardflow quantizes: docs/QUANT.md); ``get_static_quant_module_class`` and
``get_dynamic_quant_module_class`` look a float class up (torch's AssertionError when there
is none). Reference (``is_reference=True``) modules are not built.
"""

from __future__ import annotations

import copy

from .. import nn
from .quantize import (
    get_default_dynamic_quant_module_mappings,
    get_default_qat_module_mappings,
    get_default_static_quant_module_mappings,
)

__all__ = ["DEFAULT_STATIC_QUANT_MODULE_MAPPINGS", "DEFAULT_QAT_MODULE_MAPPINGS",
           "DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS", "get_static_quant_module_class",
           "get_dynamic_quant_module_class", "get_default_qconfig_propagation_list", "no_observer_set"]

DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = get_default_static_quant_module_mappings()
DEFAULT_QAT_MODULE_MAPPINGS = get_default_qat_module_mappings()
DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = get_default_dynamic_quant_module_mappings()


def _lookup(table: dict, extra, float_module_class, what: str):
    cls = {**table, **(extra or {})}.get(float_module_class)
    if cls is None:
        raise AssertionError(f"Floating point module class {float_module_class!s} does not have a "
                             f"corresponding {what} module class")
    return copy.deepcopy(cls)


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None,
                                  is_reference: bool = False):
    """The statically quantized class for ``float_module_class``."""
    if is_reference:
        raise NotImplementedError("get_static_quant_module_class(is_reference=True): reference quantized "
                                  "modules (FX graph mode's) are not built in shardflow")
    return _lookup(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS, additional_static_quant_mapping,
                   float_module_class, "quantized")


def get_dynamic_quant_module_class(float_module_class, additional_dynamic_quant_mapping=None):
    """The dynamically quantized class for ``float_module_class``."""
    return _lookup(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS, additional_dynamic_quant_mapping,
                   float_module_class, "quantized")


def get_default_qconfig_propagation_list() -> set:
    """The module classes ``propagate_qconfig_`` gives a qconfig to by default (torch's rule:
    every key of the three tables, and ``nn.Sequential``)."""
    return (set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | set(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS) | {nn.Sequential})


def no_observer_set() -> set:
    """Module classes that must not get an observer: torch's are its quantizable LSTM and
    MultiheadAttention, which shardflow does not have, so none."""
    return set()
