"""``torch.nn.utils.prune``: zero parts of a parameter through a mask, as torch does.

Reparametrisation (torch's layout, so state dicts match): pruning ``module.weight`` moves the
Parameter to ``weight_orig``, registers the mask as the buffer ``weight_mask`` (1 keeps, 0
prunes), sets the plain attribute ``weight = weight_mask * weight_orig`` and registers the
method as a forward pre-hook that recomputes that product before each forward, so gradients
reach ``weight_orig`` through the mask (zero where pruned). Pruning the same tensor again
combines the methods in a ``PruningContainer``: the new method sees only the entries (or, for
structured methods, the channels) the earlier masks kept. ``remove`` makes the pruning
permanent: ``weight`` becomes the Parameter again, holding ``mask * orig``.

Masks: ``L1Unstructured`` zeroes the ``amount`` entries of smallest absolute importance (an
int: a count; a float in [0, 1]: a fraction, rounded); ``RandomUnstructured`` a random
``amount``; ``LnStructured`` keeps the channels (slices along ``dim``) of largest Ln norm;
``RandomStructured`` keeps random channels; ``CustomFromMask`` multiplies by a given mask;
``global_unstructured`` applies one unstructured method to several parameters as one vector
(so the smallest entries overall are pruned), then stores each parameter's part with
``CustomFromMask``. Random masks use shardflow's generator (torch's draws differ).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

from ...autograd import Tensor, no_grad
from ...backend import get_array_module
from ...ops.creation import ones_like, rand
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _host(t: Tensor) -> np.ndarray:
    a = t.array
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _like(values: np.ndarray, ref: Tensor) -> Tensor:
    """``values`` as a tensor on ``ref``'s device with ``ref``'s dtype."""
    xp = get_array_module(ref.array)
    return Tensor(xp.asarray(values, dtype=ref.array.dtype))


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask(t, default_mask)`` gives the new mask; ``apply`` prunes
    a module's tensor (module docstring); the instance is the module's forward pre-hook."""

    _tensor_name: str | None = None

    def __call__(self, module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for ``t`` given the current ``default_mask`` (same shape as ``t``)."""

    def apply_mask(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        method = cls._composite(module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(orig.shape):
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                     f"got {tuple(importance_scores.shape)} vs {tuple(orig.shape)}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig.detach())
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            with no_grad():
                mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # leave the module as it was
                orig = getattr(module, name + "_orig")
                module.__dict__.pop(name, None)
                del module._parameters[name + "_orig"]
                module.register_parameter(name, orig)
            raise
        return method

    @classmethod
    def _composite(cls, module, name, *args, **kwargs):
        """This method, or a ``PruningContainer`` with the tensor's earlier method(s) and this one."""
        old = [(k, h) for k, h in module._forward_pre_hooks.items()
               if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(old) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                                 "Use a PruningContainer.")
        for k, _ in old:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old:
            old_method = old[0][1]
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                return old_method
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            return container
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask this method computes (without touching any module)."""
        if importance_scores is not None:
            if tuple(importance_scores.shape) != tuple(t.shape):
                raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                     f"{tuple(importance_scores.shape)} vs {tuple(t.shape)}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t.detach())
        with no_grad():
            mask = self.compute_mask(importance_scores.detach(), default_mask=default_mask)
        return t * mask

    def remove(self, module) -> None:
        """Make the pruning permanent: ``name`` is the Parameter again, holding ``mask * orig``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        module.__dict__.pop(self._tensor_name, None)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        module.register_parameter(self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning methods on one tensor; its mask is the last method's mask computed on
    what the earlier ones kept."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to "
                             f"PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        mask = _host(default_mask).astype(_host(t).dtype)
        n_dims = t.dim()
        if method.PRUNING_TYPE == "unstructured":
            slc = mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` '
                                     "defined.")
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = mask.sum(axis=tuple(d for d in range(n_dims) if d != dim)) != 0
            slc = tuple(keep_channel if d == dim else slice(None) for d in range(n_dims))
        elif method.PRUNING_TYPE == "global":
            slc = tuple(slice(None) for _ in range(n_dims))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        part = method.compute_mask(_like(_host(t)[slc], t), default_mask=_like(mask[slc], t))
        mask[slc] = _host(part)
        return _like(mask, default_mask)


class Identity(BasePruningMethod):
    """Prunes nothing (the mask stays all ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Zero ``amount`` entries chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.numel()
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        mask = _host(default_mask).copy()
        if k:
            prob = _host(rand(size))
            mask.reshape(-1)[np.argsort(-prob, kind="stable")[:k]] = 0
        return _like(mask, default_mask)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Zero the ``amount`` entries of smallest absolute value (of the importance scores)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.numel()
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        mask = _host(default_mask).copy()
        if k:
            mask.reshape(-1)[np.argsort(np.abs(_host(t)).reshape(-1), kind="stable")[:k]] = 0
        return _like(mask, default_mask)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t: Tensor, dim: int, keep: np.ndarray) -> np.ndarray:
    """Ones on the channels ``keep`` (a boolean vector or indices) along ``dim``, zeros elsewhere."""
    mask = np.zeros(tuple(t.shape), dtype=_host(t).dtype)
    slc = [slice(None)] * t.dim()
    slc[dim] = keep
    mask[tuple(slc)] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Zero ``amount`` channels (slices along ``dim``) chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        if k == 0:
            return default_mask
        prob = _host(rand(size))
        threshold = np.sort(prob)[k - 1]
        mask = _channel_mask(t, self.dim, prob > threshold) * _host(default_mask)
        return _like(mask, default_mask)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Zero the ``amount`` channels along ``dim`` of smallest ``n``-norm (``n``: a number,
    ``inf``, ``-inf`` or ``'fro'``)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        if k == 0:
            return default_mask
        norm = _compute_norm(_host(t), self.n, self.dim)
        keep = np.argsort(-norm, kind="stable")[:size - k]
        mask = _channel_mask(t, self.dim, keep) * _host(default_mask)
        return _like(mask, default_mask)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Multiply the current mask by a given one."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(f"default_mask shape {tuple(default_mask.shape)} must match self.mask shape "
                                 f"{tuple(self.mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune ``(module, name)`` pairs as one vector with ``pruning_method(**kwargs)`` (an
    unstructured method), so e.g. the globally smallest ``amount`` entries go."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    with no_grad():
        scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)).detach() for m, n in parameters])
        default_mask = parameters_to_vector([getattr(m, n + "_mask", ones_like(getattr(m, n).detach()))
                                             for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    with no_grad():
        final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + n].view_as(param))
        pointer += n


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent and drop its hook, mask and ``_orig``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module) -> bool:
    """True when ``module`` or a submodule has a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t) -> None:
    shape = tuple(t.shape)
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape "
                         f"{t.shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size) -> int:
    return amount if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _validate_pruning_dim(t, dim) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(a: np.ndarray, n, dim: int) -> np.ndarray:
    """The ``n``-norm of each channel along ``dim`` (``torch.norm(t, p=n, dim=other dims)``)."""
    dim = dim + a.ndim if dim < 0 else dim
    other = tuple(d for d in range(a.ndim) if d != dim)
    x = np.abs(a.astype(np.float64))
    if n == "fro":
        n = 2
    if n == float("inf"):
        return x.max(axis=other)
    if n == float("-inf"):
        return x.min(axis=other)
    if n == 0:
        return (x != 0).sum(axis=other).astype(np.float64)
    return (x ** n).sum(axis=other) ** (1.0 / n)
