"""``torch.ao.quantization.quantize_fx``: FX graph mode quantization, refused.

FX graph mode quantization rewrites a ``torch.fx`` graph of the model; shardflow's
quantization is eager mode only (``prepare`` / ``convert`` / ``quantize_dynamic`` on the
module tree, docs/QUANT.md). The module imports, so a program that imports these names but
quantizes in eager mode runs; each function raises NotImplementedError naming the eager
equivalent.
"""

from __future__ import annotations

__all__ = ["prepare_fx", "prepare_qat_fx", "convert_fx", "fuse_fx"]

_EAGER = {
    "prepare_fx": "torch.ao.quantization.prepare (after fuse_modules and setting model.qconfig)",
    "prepare_qat_fx": "torch.ao.quantization.prepare_qat",
    "convert_fx": "torch.ao.quantization.convert",
    "fuse_fx": "torch.ao.quantization.fuse_modules",
}


def _refuse(name: str):
    raise NotImplementedError(
        f"torch.ao.quantization.quantize_fx.{name}: FX graph mode quantization needs torch.fx, "
        f"which shardflow's quantization does not use; use eager mode instead: {_EAGER[name]} "
        "(docs/QUANT.md)")


def prepare_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None, _equalization_config=None,
               backend_config=None):
    _refuse("prepare_fx")


def prepare_qat_fx(model, qconfig_mapping, example_inputs, prepare_custom_config=None, backend_config=None):
    _refuse("prepare_qat_fx")


def convert_fx(graph_module, convert_custom_config=None, _remove_qconfig=True, qconfig_mapping=None,
               backend_config=None, keep_original_weights=False):
    _refuse("convert_fx")


def fuse_fx(model, fuse_custom_config=None, backend_config=None):
    _refuse("fuse_fx")
