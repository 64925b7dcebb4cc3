"""``functorch``: the pre-2.0 package of function transforms, as torch 2.x still ships it.

Programs written for functorch (``import functorch as ft``; pytorch/tutorials'
forward_ad_usage, older per-sample-gradient and ensembling code) run with that import
rewritten to ``shardflow.functorch`` (``shardflow.testing.parity.rewrite_imports``). As in
torch 2.x, every transform is ``torch.func``'s (here ``shardflow.func``: ``vmap``, ``grad``,
``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``functionalize``)
and each call warns with torch's ``FutureWarning`` (use ``torch.func.<name>`` instead).

The module API that torch.func replaced by ``functional_call`` (torch's algorithm,
``torch/_functorch/make_functional.py``):

* ``make_functional(model, disable_autograd_tracking=False) -> func, params``: a deep copy
  of ``model`` whose parameters are replaced by meta-device placeholders (``func`` is a
  ``FunctionalModule`` holding it), and the copy's own Parameters (one per tied group, in
  ``named_parameters()`` order; ``requires_grad`` off with ``disable_autograd_tracking``).
  ``func(params, *args)`` runs the copy with ``params`` put in (every tied name gets its
  group's tensor) for that call. A model with buffers raises torch's error.
* ``make_functional_with_buffers(model, ...) -> func, params, buffers``: the same with the
  buffers too (``func(params, buffers, *args)``).
* ``combine_state_for_ensemble(models) -> func, params, buffers``: the models' parameters and
  buffers stacked on a new leading dimension (detached), and the first model's ``func``, for
  ``vmap(func)``.

Not here: ``make_fx`` (a tracer of torch's dispatcher; shardflow has none).
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Sequence

from .. import func as _func
from ..func._stack_module_state import check_ensemble
from ..nn.module import Module
from ..nn.utils.stateless import _functional_call

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "combine_state_for_ensemble", "functionalize", "grad",
           "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "make_functional",
           "make_functional_with_buffers", "vjp", "vmap"]


def _warn_deprecated(api: str, new_api: str | None = None) -> None:
    """torch's FutureWarning for a functorch name, word for word."""
    new_api = new_api or f"torch.func.{api}"
    warnings.warn(
        f"We've integrated functorch into PyTorch. As the final step of the integration, `functorch.{api}` is "
        "deprecated as of PyTorch 2.0 and will be deleted in a future version of PyTorch >= 2.3. Please use "
        f"`{new_api}` instead; see the PyTorch 2.0 release notes and/or the `torch.func` migration guide for more "
        "details https://pytorch.org/docs/main/func.migrating.html", FutureWarning, stacklevel=3)


def _deprecated(transform, new_api: str | None = None):
    @functools.wraps(transform)
    def wrapper(*args, **kwargs):
        _warn_deprecated(transform.__name__, new_api)
        return transform(*args, **kwargs)

    return wrapper


vmap = _deprecated(_func.vmap, "torch.vmap")
grad = _deprecated(_func.grad)
grad_and_value = _deprecated(_func.grad_and_value)
vjp = _deprecated(_func.vjp)
jvp = _deprecated(_func.jvp)
jacrev = _deprecated(_func.jacrev)
jacfwd = _deprecated(_func.jacfwd)
hessian = _deprecated(_func.hessian)
functionalize = _deprecated(_func.functionalize)


def _extract(model: Module, named) -> tuple[tuple, tuple[str, ...], dict[str, list[str]]]:
    """The unique members (and their names) of ``named`` (``model.named_parameters`` or
    ``named_buffers``), each name mapped to all the names that share its tensor; every member
    in ``model`` is replaced by a meta-device placeholder of its shape and dtype."""
    from ..nn.utils.stateless import _swap

    unique = list(named(remove_duplicate=True))
    first_name = {id(t): name for name, t in unique}
    names_map = {name: [] for name, _ in unique}
    placeholders = {}
    for name, t in named(remove_duplicate=False):
        names_map[first_name[id(t)]].append(name)
        if id(t) not in placeholders:
            empty = t.new_empty(tuple(t.shape), device="meta")
            placeholders[id(t)] = type(t)(empty) if type(t).__name__ == "Parameter" else empty
        _swap(model, name, placeholders[id(t)])
    return tuple(t for _, t in unique), tuple(name for name, _ in unique), names_map


def _call(model: Module, names_map: dict[str, list[str]], tensors, args, kwargs):
    tensors = tuple(tensors)
    if len(tensors) != len(names_map):
        raise RuntimeError(f"functorch: the functional module expects {len(names_map)} tensors (one per parameter and "
                           f"buffer of the model it was made from, in that order), got {len(tensors)}")
    given = {alias: t for (_, aliases), t in zip(names_map.items(), tensors) for alias in aliases}
    return _functional_call(model, given, args, kwargs, tie_weights=False)


class FunctionalModule(Module):
    """What :func:`make_functional` returns: ``func(params, *args, **kwargs)``."""

    def __init__(self, stateless_model: Module, param_names: tuple[str, ...], names_map: dict[str, list[str]]) -> None:
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.names_map = names_map

    @staticmethod
    def _create_from(model: Module, disable_autograd_tracking: bool = False):
        model_copy = copy.deepcopy(model)
        params, names, names_map = _extract(model_copy, model_copy.named_parameters)
        if disable_autograd_tracking:
            for p in params:
                p.requires_grad_(False)
        return FunctionalModule(model_copy, names, names_map), params

    def forward(self, params, *args, **kwargs):
        return _call(self.stateless_model, self.names_map, params, args, kwargs)


class FunctionalModuleWithBuffers(Module):
    """What :func:`make_functional_with_buffers` returns: ``func(params, buffers, *args,
    **kwargs)``."""

    def __init__(self, stateless_model: Module, param_names: tuple[str, ...], buffer_names: tuple[str, ...],
                 param_names_map: dict[str, list[str]], buffer_names_map: dict[str, list[str]]) -> None:
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.buffer_names = buffer_names
        self.all_names_map = dict(param_names_map)
        self.all_names_map.update(buffer_names_map)

    @staticmethod
    def _create_from(model: Module, disable_autograd_tracking: bool = False):
        model_copy = copy.deepcopy(model)
        params, param_names, param_names_map = _extract(model_copy, model_copy.named_parameters)
        buffers, buffer_names, buffer_names_map = _extract(model_copy, model_copy.named_buffers)
        if disable_autograd_tracking:
            for p in params:
                p.requires_grad_(False)
        func = FunctionalModuleWithBuffers(model_copy, param_names, buffer_names, param_names_map, buffer_names_map)
        return func, params, buffers

    def forward(self, params, buffers, *args, **kwargs):
        return _call(self.stateless_model, self.all_names_map, tuple(params) + tuple(buffers), args, kwargs)


def make_functional(model: Module, disable_autograd_tracking: bool = False):
    """``func, params`` (module docstring)."""
    _warn_deprecated("make_functional", "torch.func.functional_call")
    if len(list(model.buffers())) > 0:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    return FunctionalModule._create_from(model, disable_autograd_tracking=disable_autograd_tracking)


def make_functional_with_buffers(model: Module, disable_autograd_tracking: bool = False):
    """``func, params, buffers`` (module docstring)."""
    _warn_deprecated("make_functional_with_buffers", "torch.func.functional_call")
    return FunctionalModuleWithBuffers._create_from(model, disable_autograd_tracking=disable_autograd_tracking)


def combine_state_for_ensemble(models: Sequence[Module]):
    """``func, params, buffers`` with each parameter and buffer stacked over ``models``
    (module docstring); torch's errors for no models, mixed train/eval modes or classes."""
    from ..ops import stack

    _warn_deprecated("combine_state_for_ensemble", "torch.func.stack_module_state")
    check_ensemble(list(models), "combine_state_for_ensemble")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch warns once, for this function
        funcs, params, buffers = zip(*[make_functional_with_buffers(m) for m in models])
    params = tuple(stack(list(shards)).detach() for shards in zip(*params))
    buffers = tuple(stack(list(shards)).detach() for shards in zip(*buffers))
    return funcs[0], params, buffers
