"""``torch.nn.utils.parametrize``: a parameter or buffer computed from other tensors.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (a ``ParametrizationList``, a ``ModuleList`` of
the parametrizations) and makes ``module.weight`` a property returning
``P_n(...P_1(original))``, recomputed at each access (or once per ``cached()`` block). As in
PyTorch:

* the module's class is swapped for a subclass ``Parametrized<Class>`` that carries one
  property per parametrized name; removing the last parametrization restores the class;
* if the first parametrization has ``right_inverse``, ``original`` is initialised to
  ``right_inverse(weight)``; a ``right_inverse`` that returns a sequence gives
  ``original0``, ``original1``, ... (weight norm's g and v);
* ``module.weight = t`` calls ``right_inverse`` down the list and writes the result into
  the originals in place (the same Parameter objects, so an optimizer keeps them);
* state_dict keys are ``parametrizations.<name>.original`` (or ``original<i>``) plus the
  parametrizations' own parameters and buffers under ``parametrizations.<name>.<j>.``.

Pickling a parametrized module is refused as in PyTorch (save its ``state_dict()``).
"""

from __future__ import annotations

import collections.abc
from contextlib import contextmanager

from ...autograd import Tensor, no_grad
from ..module import Module
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Within the block, each parametrized tensor is computed once, at its first access."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest: Tensor, value: Tensor) -> None:
    """``dest.set_(value)``: ``dest`` (the same object) now holds ``value``'s elements."""
    dest.data = value
    dest._version_counter[0] += 1


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its original(s) (``original`` or
    ``original0``, ``original1``, ...); ``forward()`` computes the parametrized tensor."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor | collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if new is not original:
                with no_grad():
                    _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type "
                                     f"{type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                else:
                    originali = originali.detach().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype or tuple(z.shape) != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\nparametrized dtype: {z.dtype}\n"
                    f"unparametrized shape: {original_shape}\nparametrized shape: {tuple(z.shape)}")

    def right_inverse(self, value: Tensor) -> None:
        """Write ``value`` into the originals (through each ``right_inverse``), in place."""
        with no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement "
                                       "right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                                     f"while `original` has dtype {self.original.dtype}")
                _set_in_place(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of {self.ntensors} tensors. "
                                     f"Got {type(value).__name__}")
                for i, tensor in enumerate(value):
                    _set_in_place(getattr(self, f"original{i}"), tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). "
                       "See: https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _rebuild_parametrized(base_cls, names):
    """Unpickling target of a deep copy: the ``Parametrized<Class>`` with its properties."""
    cls = type(f"Parametrized{base_cls.__name__}", (base_cls,), {"__getstate__": _refuse_pickling})
    for name in names:
        setattr(cls, name, _make_property(name))
    return cls


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def default_deepcopy(self, memo):
        import copy

        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)  # this instance's Parametrized class: shared
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        # the copy gets its own class, so adding/removing parametrizations stays per instance
        replica.__class__ = _rebuild_parametrized(cls, list(self.parametrizations.keys()))
        return replica

    dct = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _make_property(tensor_name: str) -> property:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = _cache[key] = parametrization()
            return tensor
        return parametrization()

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    return property(get_parametrized, set_original)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Parametrize ``module.<tensor_name>`` by ``parametrization`` (appended to the list if
    the tensor is already parametrized). ``unsafe=True`` skips the shape/dtype checks."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.dtype: {y.dtype}\nparametrization(module.{tensor_name}).dtype: "
                    f"{x.dtype}\nmodule.{tensor_name}.shape: {tuple(y.shape)}\n"
                    f"parametrization(module.{tensor_name}).shape: {tuple(x.shape)}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor) or z.dtype != y.dtype or tuple(z.shape) != tuple(y.shape):
                        raise ValueError("parametrization.right_inverse must return a tensor of the same "
                                         f"shape and dtype as module.{tensor_name}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        setattr(module.__class__, tensor_name, _make_property(tensor_name))
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
                         f"element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations on ``tensor_name``: the tensor becomes a plain parameter
    (or buffer) again, holding the parametrized value (``leave_parametrized=True``) or the
    original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                if t.dtype != original.dtype or tuple(t.shape) != tuple(original.shape):
                    raise RuntimeError(
                        "Calling remove_parametrizations() with leave_parametrized=True for a parameter "
                        "that is an instance of a tensor subclass requires set_() to be implemented "
                        f"correctly; here the parametrized tensor has shape {tuple(t.shape)} and dtype "
                        f"{t.dtype} while the original has {tuple(original.shape)} and {original.dtype}")
                _set_in_place(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before ``register_parametrization`` swapped it."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Copy the parametrizations (and their originals' values) of ``from_module`` onto
    ``to_module`` (all of them, or the one on ``tensor_name``)."""
    if not is_parametrized(from_module):
        return to_module
    if not is_parametrized(to_module):
        to_module.parametrizations = ModuleDict()
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for p in from_module.parametrizations[name]:
            register_parametrization(to_module, name, p)
        src = from_module.parametrizations[name]
        dst = to_module.parametrizations[name]
        with no_grad():
            if src.is_tensor:
                _set_in_place(dst.original, src.original.detach().clone())
            else:
                for i in range(src.ntensors):
                    _set_in_place(getattr(dst, f"original{i}"), getattr(src, f"original{i}").detach().clone())
    return to_module

