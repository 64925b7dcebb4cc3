"""Eager-mode quantization workflows with ``torch.ao.quantization``'s names.

Post-training static (PTQ)::

    model.qconfig = get_default_qconfig("x86")     # on the model or any submodule
    prepared = prepare(model.eval())               # observers on QuantStub / Linear / Conv2d outputs
    for x in calibration_batches: prepared(x)      # observers record ranges
    qmodel = convert(prepared)                     # int8 modules with those qparams

Quantization-aware training (QAT)::

    model.qconfig = get_default_qat_qconfig("x86")
    qat = prepare_qat(model.train())               # Linear/Conv2d -> qat.* (fake-quant weights),
    ...train qat as usual...                       # FakeQuantize on their outputs (STE backward)
    qmodel = convert(qat.eval())

Dynamic: ``quantize_dynamic(model, {nn.Linear}, dtype=qint8)`` swaps Linear layers for
int8-weight layers that quantize activations per batch (no calibration).

What each step does:

* ``propagate_qconfig_``: every module gets ``qconfig`` from its nearest ancestor that has one
  (``qconfig_dict`` entries by type or dotted name override). ``None`` keeps a subtree float.
* ``prepare``: each leaf of an observed type (QuantStub, Linear, Conv2d, their QAT forms) with
  a qconfig gets ``activation_post_process = qconfig.activation()`` and a forward hook that
  passes its output through it (observers return their input; FakeQuantize returns the
  fake-quantized output). A ``FloatFunctional`` gets the observer in place of its
  ``Identity`` and no hook (its ``add`` / ``cat`` / ... call it).
* ``convert``: each module whose type is in the mapping and has a qconfig is replaced by
  ``mapping[type].from_float(module)`` (weights quantized with ``qconfig.weight`` or the QAT
  module's trained ``weight_fake_quant``; output qparams from its observer). ReLU, MaxPool2d,
  Flatten, Dropout and Identity become wrappers that run on the integers (see
  ``modules/static.py``). Functional calls in ``forward`` (``F.relu(x)``, ``x.view(...)``) do
  not take QuantizedTensors: write them as modules.
"""

from __future__ import annotations

import copy

from .. import nn
from ..nn.module import Module
from .modules import dynamic as nnqd
from .modules import dynamic_rnn as nnqd_rnn
from .modules import functional_modules as nnqf
from .modules import intrinsic as nni
from .modules import qat as nnqat
from .modules import static as nnq
from .qconfig import QConfig, default_dynamic_qconfig
from .qtypes import as_qdtype, qint8
from .stubs import DeQuantStub, QuantStub

__all__ = [
    "propagate_qconfig_", "prepare", "convert", "prepare_qat", "quantize", "quantize_qat",
    "quantize_dynamic", "swap_module", "get_default_static_quant_module_mappings",
    "get_default_qat_module_mappings", "get_default_dynamic_quant_module_mappings",
]


def get_default_static_quant_module_mappings() -> dict:
    return {
        QuantStub: nnq.Quantize, DeQuantStub: nnq.DeQuantize,
        nn.Linear: nnq.Linear, nn.Conv2d: nnq.Conv2d, nnqat.Linear: nnq.Linear,
        nnqat.Conv2d: nnq.Conv2d, nn.ReLU: nnq.ReLU, nn.MaxPool2d: nnq.MaxPool2d,
        nn.Flatten: nnq.Flatten, nn.Dropout: nnq.Dropout, nn.Identity: nnq.Identity,
        nn.AdaptiveAvgPool2d: nnq.AdaptiveAvgPool2d, nn.ReLU6: nnq.ReLU6, nn.Hardswish: nnq.Hardswish,
        nni.ConvReLU2d: nnq.ConvReLU2d, nni.LinearReLU: nnq.LinearReLU,
        nni.QATConvReLU2d: nnq.ConvReLU2d, nni.QATLinearReLU: nnq.LinearReLU,
        nnqf.FloatFunctional: nnqf.QFunctional,
    }


def get_default_qat_module_mappings() -> dict:
    return {nn.Linear: nnqat.Linear, nn.Conv2d: nnqat.Conv2d, nni.ConvReLU2d: nni.QATConvReLU2d,
            nni.LinearReLU: nni.QATLinearReLU}


def get_default_dynamic_quant_module_mappings() -> dict:
    return {nn.Linear: nnqd.Linear, nn.LSTM: nnqd_rnn.LSTM}


# qat.* subclass these; ReLU6 and Hardswish are observed as torch observes them (ReLU6's int8
# form keeps the input's qparams, but a prepared model prints the observer, and QAT
# fake-quantizes there; Hardswish takes its output qparams from it)
_OBSERVED = (QuantStub, nn.Linear, nn.Conv2d, nni.FusedModule, nn.ReLU6, nn.Hardswish)


def propagate_qconfig_(module: Module, qconfig_dict: dict | None = None) -> None:
    """Set ``qconfig`` on every submodule from its nearest configured ancestor, in place.
    ``qconfig_dict`` maps a module type or a dotted name (``""`` = the root) to a QConfig."""
    qconfig_dict = qconfig_dict or {}

    def visit(mod, prefix, inherited):
        qc = qconfig_dict.get(type(mod), inherited)
        qc = qconfig_dict.get(prefix, qc)
        qc = mod.__dict__.get("qconfig", qc) if "qconfig" in mod.__dict__ else qc
        mod.qconfig = qc
        for name, child in mod.named_children():
            visit(child, f"{prefix}.{name}" if prefix else name, qc)

    visit(module, "", None)


def _observer_hook(module, args, output):
    return module.activation_post_process(output)


def _add_observers(mod: Module) -> None:
    qc = getattr(mod, "qconfig", None)
    if qc is not None and type(mod) is nnqf.FloatFunctional:
        # observed inside its methods (torch: no hook), its Identity replaced
        mod.activation_post_process = qc.activation()
        return
    if qc is not None and isinstance(mod, _OBSERVED) and "activation_post_process" not in mod._modules:
        mod.activation_post_process = qc.activation()
        mod._observer_hook_handle = mod.register_forward_hook(_observer_hook)
    if isinstance(mod, nni.FusedModule):
        return  # observed as one leaf: its output, not its inner layer's
    for child in list(mod.children()):
        _add_observers(child)


def _check_has_qconfig(model, fn):
    if not any(getattr(m, "qconfig", None) is not None for m in model.modules()):
        raise ValueError(
            f"{fn}: no module has a qconfig, so nothing would be quantized; set e.g. "
            "model.qconfig = get_default_qconfig('x86') (or get_default_qat_qconfig for QAT) first"
        )


def _check_on_cpu(model: Module, fn: str) -> None:
    """Quantized kernels are CPU kernels (as PyTorch's fbgemm/qnnpack): refuse a GPU model
    before anything is copied or swapped."""
    for name, t in [*model.named_parameters(), *model.named_buffers()]:
        if t.device.type != "cpu":
            raise RuntimeError(
                f"{fn}: {name!r} is on {t.device}, and quantization runs on the CPU (int8 "
                f"kernels, like PyTorch's fbgemm); move the model first: {fn}(model.cpu(), ...)"
            )


def prepare(model: Module, inplace: bool = False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None) -> Module:
    """Attach observers for post-training static quantization (see the module docstring)."""
    _check_on_cpu(model, "prepare")
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    _check_has_qconfig(model, "prepare")
    _add_observers(model)
    return model


def swap_module(mod: Module, mapping: dict) -> Module:
    """``mapping[type(mod)].from_float(mod)`` when the type is mapped and has a qconfig."""
    cls = mapping.get(type(mod))
    if cls is None or getattr(mod, "qconfig", None) is None:
        return mod
    if issubclass(cls, nnq.Linear | nnq.Conv2d | nnq.Quantize) and "activation_post_process" not in mod._modules:
        raise ValueError(
            f"convert: {type(mod).__name__} has a qconfig but no observer; call prepare() (and "
            "run calibration batches) before convert()"
        )
    return cls.from_float(mod)


def _convert_children(module: Module, mapping: dict) -> None:
    for name, child in list(module.named_children()):
        if type(child) not in mapping:
            _convert_children(child, mapping)
        new = swap_module(child, mapping)
        if new is not child:
            setattr(module, name, new)


def convert(module: Module, mapping: dict | None = None, inplace: bool = False,
            remove_qconfig: bool = True, convert_custom_config_dict=None) -> Module:
    """Swap observed float (or QAT) modules for quantized ones (see the module docstring)."""
    if not any("activation_post_process" in m._modules for m in module.modules()):
        raise ValueError(
            "convert: the model has no observers, so there is nothing to convert; call "
            "prepare(model) (or prepare_qat) and run calibration (or training) batches first"
        )
    if not inplace:
        module = copy.deepcopy(module)
    _convert_children(module, get_default_static_quant_module_mappings() if mapping is None else mapping)
    if remove_qconfig:
        for m in module.modules():
            m.__dict__.pop("qconfig", None)
    return module


def prepare_qat(model: Module, mapping: dict | None = None, inplace: bool = False) -> Module:
    """Swap Linear / Conv2d for their QAT forms and attach FakeQuantize output observers."""
    _check_on_cpu(model, "prepare_qat")
    if not model.training:
        raise ValueError("prepare_qat only works on models in training mode; call model.train() first")
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    _check_has_qconfig(model, "prepare_qat")
    _convert_children(model, get_default_qat_module_mappings() if mapping is None else mapping)
    _add_observers(model)
    return model


def quantize(model: Module, run_fn, run_args, mapping=None, inplace: bool = False) -> Module:
    """PTQ in one call: ``prepare``, ``run_fn(prepared, *run_args)`` (calibration), ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    return convert(model, mapping, inplace=True)


def quantize_qat(model: Module, run_fn, run_args, inplace: bool = False) -> Module:
    """QAT in one call: ``prepare_qat``, ``run_fn(model, *run_args)`` (training), ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    model.eval()
    return convert(model, inplace=True)


def quantize_dynamic(model: Module, qconfig_spec=None, dtype=qint8, mapping=None,
                     inplace: bool = False) -> Module:
    """Swap Linear layers for dynamic int8 ones. ``qconfig_spec``: a set of types/names
    (each gets the default dynamic qconfig) or a dict type/name -> QConfig; default
    ``{nn.Linear}``. Only ``dtype=qint8`` is built (PyTorch's float16 variant is not)."""
    if as_qdtype(dtype) is not qint8:
        raise ValueError(f"quantize_dynamic: only dtype=qint8 is supported, got {dtype!r}")
    _check_on_cpu(model, "quantize_dynamic")
    if qconfig_spec is None:
        qconfig_spec = {nn.Linear: default_dynamic_qconfig}
    elif isinstance(qconfig_spec, set | list | tuple):
        qconfig_spec = {k: default_dynamic_qconfig for k in qconfig_spec}
    for k, v in qconfig_spec.items():
        if v is not None and not isinstance(v, QConfig):
            raise TypeError(f"quantize_dynamic: qconfig_spec[{k!r}] must be a QConfig, got {type(v).__name__}")
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_spec)
    _convert_children(model, get_default_dynamic_quant_module_mappings() if mapping is None else mapping)
    for m in model.modules():
        m.__dict__.pop("qconfig", None)
    return model

