"""Spectral normalisation, the legacy hook form: ``torch.nn.utils.spectral_norm`` /
``remove_spectral_norm`` (Miyato et al., 2018).

``weight = weight_orig / sigma``, ``sigma`` the largest singular value of ``weight_orig``
viewed as a matrix (``dim`` first, the other dimensions flattened), estimated by power
iteration: in training mode each forward runs ``n_power_iterations`` steps
``v = normalize(W^T u)``, ``u = normalize(W v)`` (no gradient; ``u``, ``v`` updated in place),
then ``sigma = u . (W v)`` with the gradient flowing through ``W`` only. In eval mode the
stored ``u``, ``v`` are used unchanged. Parameters and buffers are torch's: ``weight_orig``
(the parameter object that was ``weight``), buffers ``weight_u`` (h,) and ``weight_v``
(w,), initialised to normalised N(0, 1) draws; ``module.weight`` is a plain attribute set by a
forward pre-hook. ``dim`` defaults to 1 for ``ConvTranspose*`` (their weight is (in, out, ...)).
"""

from __future__ import annotations

from ...autograd import Tensor, no_grad
from .. import functional as F
from ..parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm", "weight_to_matrix"]


def weight_to_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix (weight.shape[dim], numel / weight.shape[dim])."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.flatten(1)


def default_dim(module) -> int:
    return 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
                                          "LazyConvTranspose1d", "LazyConvTranspose2d",
                                          "LazyConvTranspose3d") else 0


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name>`` to ``<name>_orig / sigma``."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return weight_to_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration: bool) -> Tensor:
        from ... import ops

        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)  # (h, w)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ops.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ops.mv(weight_mat, v), dim=0, eps=self.eps))
                u = u.clone()  # the buffers change at the next step; autograd keeps these
                v = v.clone()
        sigma = ops.dot(u, ops.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None "
                             f"(or {type(module).__name__} has no parameter `{name}`)")
        if type(weight).__name__ == "UninitializedParameter":
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None):
    """Apply spectral normalisation to ``module.<name>`` (legacy hook form; module docstring)."""
    SpectralNorm.apply(module, name, n_power_iterations, default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Make ``<name>`` a plain parameter again, holding ``<name>_orig / sigma``."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
