"""torch.ao.quantization's TorchScript workflow (``quantize_jit`` ...): refused.

It quantizes a ``torch.jit.script``/``trace`` graph; shardflow has no TorchScript graphs
(``jit.script`` runs eagerly), so each function raises NotImplementedError naming the eager
workflow (docs/QUANT.md). Importing the names works.
"""

from __future__ import annotations

__all__ = ["script_qconfig", "script_qconfig_dict", "fuse_conv_bn_jit", "prepare_jit", "prepare_dynamic_jit",
           "convert_jit", "convert_dynamic_jit", "quantize_jit", "quantize_dynamic_jit"]

_EAGER = ("torch.ao.quantization.prepare / convert / quantize_dynamic on the module itself "
          "(eager mode, docs/QUANT.md)")


def _refuse(name: str):
    raise NotImplementedError(f"torch.ao.quantization.{name}: TorchScript graph quantization needs a "
                              f"scripted graph, which shardflow does not make; use {_EAGER}")


def script_qconfig(qconfig):
    _refuse("script_qconfig")


def script_qconfig_dict(qconfig_dict):
    _refuse("script_qconfig_dict")


def fuse_conv_bn_jit(model, inplace=False):
    _refuse("fuse_conv_bn_jit")


def prepare_jit(model, qconfig_dict, inplace=False):
    _refuse("prepare_jit")


def prepare_dynamic_jit(model, qconfig_dict, inplace=False):
    _refuse("prepare_dynamic_jit")


def convert_jit(model, inplace=False, debug=False, preserved_attrs=None):
    _refuse("convert_jit")


def convert_dynamic_jit(model, inplace=False, debug=False, preserved_attrs=None):
    _refuse("convert_dynamic_jit")


def quantize_jit(model, qconfig_dict, run_fn, run_args, inplace=False, debug=False):
    _refuse("quantize_jit")


def quantize_dynamic_jit(model, qconfig_dict, inplace=False, debug=False):
    _refuse("quantize_dynamic_jit")
