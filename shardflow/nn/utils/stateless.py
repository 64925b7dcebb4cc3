"""``torch.nn.utils.stateless.functional_call``: call a module with some of its parameters and
buffers replaced by given tensors, for that call only.

Algorithm (torch's): with ``tie_weights`` (default), names that share one tensor in the module
(``named_parameters(remove_duplicate=False)``) all get the value given for any of them (two
different values for one tied group raise). With ``strict``, the given names must be exactly the
module's parameters and buffers. Each given ``"sub.name"`` is swapped into its owner's
``_parameters`` / ``_buffers`` dict as it is (a plain Tensor is allowed there for the call, so
gradients flow to the passed tensors), or set as an attribute when the owner has no such
member; after the call (also when it raises) the originals are swapped back and names that
were missing are deleted. Tensors the module rebinds during the call (``self.x = self.x + 1``)
are written back into the caller's dict, as torch does.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

from ..module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _owner(module: Module, name: str) -> tuple[Module, str]:
    *path, leaf = name.split(".")
    owner = module
    for i, part in enumerate(path):
        child = owner._modules.get(part) if isinstance(owner, Module) else None
        if child is None:
            raise AttributeError(f"functional_call: '{'.'.join(path[:i + 1])}' in key {name!r} is not a submodule of "
                                 f"{type(module).__name__}; keys are dotted names as in named_parameters()")
        owner = child
    return owner, leaf


def _swap(module: Module, name: str, value):
    """Put ``value`` (or remove the member when ``value`` is _MISSING) under ``name``; return the old value."""
    owner, leaf = _owner(module, name)
    for members in (owner._parameters, owner._buffers):
        if leaf in members:
            old = members[leaf]
            if value is _MISSING:
                del members[leaf]
            else:
                members[leaf] = value
            return old
    old = owner.__dict__.get(leaf, _MISSING)
    if value is _MISSING:
        owner.__dict__.pop(leaf, None)
    else:
        object.__setattr__(owner, leaf, value)
    return old


def _untie(module: Module, given: dict) -> dict:
    names_of: dict[int, list[str]] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        if t is not None:
            names_of.setdefault(id(t), []).append(name)
    untied = dict(given)
    for names in names_of.values():
        if len(names) < 2:
            continue
        values = {id(given[n]): given[n] for n in names if n in given}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
        if values:
            (value,) = values.values()
            untied.update(dict.fromkeys(names, value))
    return untied


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict, tie_weights: bool = False,
                          strict: bool = False):
    values = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        expected = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        expected |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(expected - set(values)), sorted(set(values) - expected)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(msgs))
    for name in values:  # every key resolves before anything is swapped
        _owner(module, name)
    originals: dict[str, Any] = {}
    try:
        for name, value in values.items():
            originals[name] = _swap(module, name, value)
        yield
    finally:
        current = {name: _swap(module, name, old) for name, old in reversed(list(originals.items()))}
        parameters_and_buffers.update({k: current[k] for k in parameters_and_buffers if k in current})


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    from ..parallel import DataParallel

    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` in place of the module's own
    (module docstring). Deprecated in torch 2.0 in favour of ``shardflow.func.functional_call``
    (the same call); warns as torch does."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
