"""FSDP1's auto-wrap policies and ``enable_wrap`` / ``wrap`` (PyTorch's
``torch.distributed.fsdp.wrap``): which submodules become their own FSDP unit.

Two kinds of policy, as in PyTorch:

* a **callable** ``policy(module, recurse, nonwrapped_numel) -> bool`` (``functools.partial``
  of :func:`size_based_auto_wrap_policy`, :func:`transformer_auto_wrap_policy`,
  :func:`lambda_auto_wrap_policy`), applied by :func:`_recursive_wrap`: with ``recurse=True``
  the policy says whether to look inside ``module``; the children are wrapped first (depth
  first), then with ``recurse=False`` whether ``module`` itself becomes a unit, given the
  parameter count its wrapped children left (``nonwrapped_numel``);
* a **policy object** (:class:`ModuleWrapPolicy`, :class:`CustomPolicy`) that names the
  target modules, each with its constructor keyword arguments
  (``_run_policy``); :func:`_post_order_apply` wraps them children first.

The root module itself is never wrapped by the policy (the FSDP constructor wraps it).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable

from ...nn.modules.activation import MultiheadAttention
from ...nn.modules.container import ModuleDict, ModuleList

__all__ = [
    "always_wrap_policy", "lambda_auto_wrap_policy", "transformer_auto_wrap_policy",
    "size_based_auto_wrap_policy", "enable_wrap", "wrap", "CustomPolicy", "ModuleWrapPolicy",
]


def always_wrap_policy(*args, **kwargs) -> bool:
    """Wrap every module (each submodule its own unit)."""
    return True


class _Policy:
    """A policy object: ``_run_policy`` maps each target module to its FSDP kwargs."""

    def _run_policy(self, root_module, ignored_modules, root_kwargs) -> dict:
        raise NotImplementedError


def _module_wrap_policy(module, recurse: bool, nonwrapped_numel: int, module_classes) -> bool:
    if recurse:
        return True
    return isinstance(module, tuple(module_classes))


class ModuleWrapPolicy(_Policy):
    """Wrap every module that is an instance of one of ``module_classes``."""

    def __init__(self, module_classes: Iterable[type]):
        module_classes_set = set(module_classes)
        for c in module_classes_set:
            if not isinstance(c, type):
                raise TypeError(f"ModuleWrapPolicy expects module classes, got {c!r}; pass e.g. "
                                "{TransformerBlock}")
        self._module_classes = module_classes_set
        self._module_classes_str = str(module_classes_set)

    def _run_policy(self, root_module, ignored_modules, root_kwargs) -> dict:
        classes = tuple(self._module_classes)
        return {m: copy.copy(root_kwargs) for m in root_module.modules()
                if m not in ignored_modules and isinstance(m, classes)}

    def __call__(self, module, recurse, *args, **kwargs):
        return _module_wrap_policy(module, recurse, nonwrapped_numel=-1, module_classes=self._module_classes)

    def __repr__(self) -> str:
        return super().__repr__() + f"({self._module_classes_str})"


class CustomPolicy(_Policy):
    """``lambda_fn(module)`` returns ``True`` (wrap with the root's kwargs), ``False``, or a
    dict of kwargs that override the root's for that unit."""

    def __init__(self, lambda_fn: Callable):
        self._lambda_fn = lambda_fn

    def _run_policy(self, root_module, ignored_modules, root_kwargs) -> dict:
        out = {}
        for module in root_module.modules():
            if module in ignored_modules:
                continue
            res = self._lambda_fn(module)
            if not isinstance(res, dict | bool):
                raise ValueError(
                    "The lambda_fn passed to CustomPolicy should return False/True or a kwarg "
                    f"dict, but it returned {res}")
            if not res:
                continue
            kwargs = copy.copy(root_kwargs)
            if isinstance(res, dict):
                kwargs.update(res)
            out[module] = kwargs
        return out


def lambda_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int, lambda_fn: Callable) -> bool:
    """Wrap the modules for which ``lambda_fn(module)`` is true."""
    if recurse:
        return True
    return lambda_fn(module)


def transformer_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int, transformer_layer_cls) -> bool:
    """Wrap every instance of a class in ``transformer_layer_cls`` (the transformer blocks)."""
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def _or_policy(module, recurse: bool, nonwrapped_numel: int, policies) -> bool:
    return any(policy(module=module, recurse=recurse, nonwrapped_numel=nonwrapped_numel)
               for policy in policies)


def size_based_auto_wrap_policy(module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8), force_leaf_modules=None,
                                exclude_wrap_modules=None) -> bool:
    """Wrap a module once the parameters not yet in a unit number ``min_num_params``;
    never look inside ``force_leaf_modules`` (default ``{MultiheadAttention}``), never wrap
    ``exclude_wrap_modules`` (default ``{ModuleList, ModuleDict}``)."""
    force_leaf_modules = (size_based_auto_wrap_policy.FORCE_LEAF_MODULES
                          if force_leaf_modules is None else force_leaf_modules)
    exclude_wrap_modules = (size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES
                            if exclude_wrap_modules is None else exclude_wrap_modules)
    is_large = nonwrapped_numel >= min_num_params
    if recurse:
        return is_large and not isinstance(module, tuple(force_leaf_modules))
    return is_large and not isinstance(module, tuple(exclude_wrap_modules))


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {ModuleList, ModuleDict}
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {MultiheadAttention}


# ---------------------------------------------------------------------------- enable_wrap / wrap
class _ConfigAutoWrap:
    """The ``enable_wrap`` context's wrapper class and kwargs (one context at a time)."""

    in_autowrap_context: bool = False
    wrapper_cls = None
    kwargs: dict = {}

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self) -> None:
        if _ConfigAutoWrap.in_autowrap_context:
            raise NotImplementedError(
                "You are already within an autowrap context and we currently do not supported "
                "nested autowrap.")
        kwargs = dict(self.kwargs)
        if "wrapper_cls" not in kwargs:
            raise ValueError("enable_wrap expects wrapper_cls=FullyShardedDataParallel")
        _ConfigAutoWrap.wrapper_cls = kwargs.pop("wrapper_cls")
        _ConfigAutoWrap.kwargs = kwargs
        _ConfigAutoWrap.in_autowrap_context = True

    def __exit__(self, *exc) -> None:
        _ConfigAutoWrap.in_autowrap_context = False
        _ConfigAutoWrap.wrapper_cls = None
        _ConfigAutoWrap.kwargs = {}


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls, **wrapper_kwargs):
    """Inside the context, :func:`wrap` wraps a module with ``wrapper_cls(module,
    **wrapper_kwargs)``; outside it ``wrap`` returns the module unchanged."""
    with _ConfigAutoWrap(wrapper_cls=wrapper_cls, **wrapper_kwargs):
        yield


def wrap(module, **wrap_overrides):
    """``wrapper_cls(module, **{**enable_wrap's kwargs, **wrap_overrides})`` inside
    :func:`enable_wrap`, else ``module`` itself."""
    if _ConfigAutoWrap.in_autowrap_context:
        return _wrap(module, _ConfigAutoWrap.wrapper_cls, **{**_ConfigAutoWrap.kwargs, **wrap_overrides})
    return module


def _wrap(module, wrapper_cls, **kwargs):
    overrides = getattr(module, "_wrap_overrides", None)
    if overrides:
        kwargs = {**kwargs, **overrides}
    return wrapper_cls(module, **kwargs)


# ---------------------------------------------------------------------------- applying a policy
def _check_policy(policy) -> None:
    if policy is not None and not (isinstance(policy, _Policy) or callable(policy)):
        raise TypeError(
            f"auto_wrap_policy must be a callable (module, recurse, nonwrapped_numel) -> bool "
            f"(e.g. functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={{Block}})) "
            f"or a ModuleWrapPolicy / CustomPolicy, got {type(policy).__name__}")


def _recursive_wrap(module, auto_wrap_policy, wrapper_cls, ignored_modules, ignored_params,
                    only_wrap_children: bool = False, **kwargs):
    """``(module or its wrapper, number of parameters wrapped)``: PyTorch's depth-first walk
    for a callable policy (see the module docstring)."""
    for _, child in module.named_modules():
        if child in ignored_modules:
            continue
        if isinstance(child, wrapper_cls):
            raise ValueError(f"Child module {type(child).__name__} is already wrapped by "
                             f"{wrapper_cls.__name__}; pass the unwrapped model with auto_wrap_policy")
    ignored_ids = {id(p) for p in ignored_params}
    nonwrapped_numel = sum(p.numel() for p in module.parameters() if id(p) not in ignored_ids)
    if auto_wrap_policy(module=module, recurse=True, nonwrapped_numel=nonwrapped_numel):
        total_wrapped_numel = 0
        for name, child in list(module.named_children()):
            if child in ignored_modules:
                continue
            wrapped_child, num = _recursive_wrap(child, auto_wrap_policy, wrapper_cls, ignored_modules,
                                                 ignored_params, **kwargs)
            if wrapped_child is not child:
                setattr(module, name, wrapped_child)
            total_wrapped_numel += num
        remainder = nonwrapped_numel - total_wrapped_numel
        if not only_wrap_children and auto_wrap_policy(module=module, recurse=False,
                                                       nonwrapped_numel=remainder):
            return _wrap(module, wrapper_cls, **kwargs), nonwrapped_numel
        return module, total_wrapped_numel
    return module, 0


def _post_order_apply(root_module, target_module_to_kwargs: dict, wrapper_cls) -> None:
    """Wrap each target module (not the root) with its kwargs, children before parents."""

    def visit(module) -> None:
        for name, child in list(module.named_children()):
            if isinstance(child, wrapper_cls):
                continue
            visit(child)
            if child in target_module_to_kwargs:
                setattr(module, name, wrapper_cls(child, **target_module_to_kwargs[child]))

    visit(root_module)
