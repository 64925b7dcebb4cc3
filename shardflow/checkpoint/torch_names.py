"""What the globals of a PyTorch pickle become in shardflow, and how a pickled module's state
is put into a shardflow module.

A ``torch.save(model)`` file names PyTorch's classes and functions by their module path
(``torch.nn.modules.linear.Linear``, ``torch.nn.functional.relu``, ``torch._C._nn.gelu``).
``shardflow_global(module, name)`` maps such a name to the shardflow object with the same
PyTorch name: ``torch.nn.modules.<file>.<Cls>`` and ``torch.nn.<Cls>`` -> ``shardflow.nn.<Cls>``;
``torch.nn.functional.<f>`` and ``torch._C._nn.<f>`` -> ``shardflow.nn.functional.<f>``;
``torch.nn.parameter.Parameter`` / ``Buffer`` -> ``shardflow.nn``; ``torch.<f>`` and
``torch._C._VariableFunctions.<f>`` -> the op ``shardflow.<f>``. Other ``torch.*`` names
map to nothing (the loader then names the global in its error).

``restore_module(module, state)`` is BUILD for a shardflow ``Module`` made by the pickle
(``cls.__new__(cls)``): the module's bookkeeping is created as ``Module.__init__`` does,
then the pickled ``__dict__`` is laid over it. PyTorch's Module state has the same keys as
shardflow's (``training``, ``_parameters``, ``_buffers``, ``_non_persistent_buffers_set``,
``_modules``, hook dicts) plus three that shardflow has no use for
(``_is_full_backward_hook``, ``_state_dict_pre_hooks``, ``_load_state_dict_pre_hooks``:
dropped); a layer's own attributes (``in_features``, ``num_layers`` ...) carry PyTorch's
names in both, so a file from either library restores the same module. Hooks in the file
are kept (in shardflow's containers); attributes PyTorch keeps for its own kernels (an
RNN's ``_flat_weights``) are kept too and are unused.
"""

from __future__ import annotations

from .. import nn, ops
from ..nn import functional as F
from ..nn.module import Module

__all__ = ["shardflow_global", "restore_module", "is_torch_name"]

# PyTorch Module state that has no counterpart in shardflow (dropped on load).
_TORCH_ONLY_KEYS = frozenset({"_is_full_backward_hook", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks"})


def is_torch_name(module: str) -> bool:
    return module == "torch" or module.startswith("torch.")


def shardflow_global(module: str, name: str):
    """The shardflow object standing for PyTorch's ``module.name``, or None."""
    if module.startswith("torch.nn.modules") or module in ("torch.nn", "torch.nn.parameter"):
        obj = getattr(nn, name, None)
        if obj is None:  # a class torch.nn does not export (NonDynamicallyQuantizableLinear)
            files = (getattr(nn.modules, f) for f in dir(nn.modules) if not f.startswith("_"))
            obj = next((getattr(f, name) for f in files if hasattr(f, name)), None)
        return obj if isinstance(obj, type) else None
    if module in ("torch.nn.functional", "torch._C._nn"):
        return getattr(F, name, None)
    if module in ("torch", "torch._C._VariableFunctions") and not name.startswith("_"):
        return getattr(ops, name, None)
    return None


def restore_module(module: Module, state) -> None:
    """Set the state of a module the unpickler created without ``__init__`` (see above)."""
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if not isinstance(state, dict):
        raise TypeError(f"the pickled state of a {type(module).__name__} must be a dict, got {type(state).__name__}")
    Module.__init__(module)
    d = module.__dict__
    for key, value in state.items():
        if key in _TORCH_ONLY_KEYS:
            continue
        own = d.get(key)
        if "_hooks" in key and isinstance(own, dict) and isinstance(value, dict):
            own.update(value)  # keep shardflow's container type (OrderedDict or dict)
            continue
        d[key] = value
    for key, value in (slots or {}).items():
        setattr(module, key, value)
