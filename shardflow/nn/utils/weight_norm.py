"""Weight normalisation, the legacy hook form: ``torch.nn.utils.weight_norm`` /
``remove_weight_norm`` (Salimans & Kingma, 2016).

``weight = g * v / ||v||``, the norm taken over every dimension except ``dim`` (``dim=None``
or ``-1``: over the whole tensor, PyTorch's convention). ``weight_norm(module, "weight",
dim)`` replaces the parameter ``weight`` by ``weight_g`` (the norms, shape 1 except along
``dim``) and ``weight_v`` (the direction), registered in that order after the module's
other parameters (so state_dict keys are torch's: ``bias``, ``weight_g``, ``weight_v``), and
recomputes ``module.weight`` (a plain attribute) in a forward pre-hook. PyTorch deprecates
this form for ``torch.nn.utils.parametrizations.weight_norm`` and warns (FutureWarning);
shardflow warns the same way.
"""

from __future__ import annotations

import warnings

from ...autograd import Tensor
from ..parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept as size-1 dimensions
    (``dim == -1``: the norm of the whole tensor, a 0-d tensor, as torch's)."""
    if dim == -1:
        return v.norm(pow)
    others = tuple(d for d in range(v.ndim) if d != dim)
    return v.norm(pow, dim=others, keepdim=True)  # (1, .., v.shape[dim], .., 1)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g``/``<name>_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name: str, dim: int | None) -> WeightNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)  # a missing name: AttributeError, as torch
        if type(weight).__name__ == "UninitializedParameter" or weight is None:
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying weight normalization")
        if name not in module._parameters:
            raise ValueError(f"weight_norm expects '{name}' to be a parameter of {type(module).__name__}, "
                             f"got {type(weight).__name__}")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int | None = 0):
    """Apply weight normalisation to ``module.<name>`` (legacy hook form; see module docstring)."""
    # at this line, not the caller's: torch's comes from its own weight_norm.py (the
    # @deprecated WeightNorm.apply, stacklevel 2), so Python's default filter shows it once
    # per process, not once per calling line
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=1)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Fold ``<name>_g``/``<name>_v`` back into one parameter ``<name>`` and drop the hook."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
