"""``torch.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as
parametrizations (``nn.utils.parametrize``), PyTorch's current forms.

* ``weight_norm(module, name, dim=0)``: ``module.parametrizations.<name>.original0`` is
  ``g`` (the norms over every dimension but ``dim``) and ``original1`` is ``v``;
  ``module.<name>`` computes ``v * g / ||v||``. A state dict saved from the legacy form
  (``<name>_g``, ``<name>_v``) loads into it (renamed by a load-state-dict pre-hook, as torch).
* ``spectral_norm(module, name, n_power_iterations=1, eps=1e-12, dim=None)``: buffers
  ``parametrizations.<name>.0._u`` (h,) and ``._v`` (w,), initialised to normalised N(0, 1)
  draws then 15 power iterations; each training-mode access runs ``n_power_iterations``
  steps ``u = normalize(W v)``, ``v = normalize(W^T u)`` in place (no gradient) and returns
  ``W / (u . W v)``; eval mode does not update ``u``, ``v``. A 1-d weight is simply
  normalised.
* ``orthogonal(module, name, orthogonal_map=None, *, use_trivialization=True)``: see
  ``orthogonal.py``.
"""

from __future__ import annotations

from ...autograd import Tensor, no_grad
from .. import functional as F
from ..module import Module
from . import parametrize
from .orthogonal import orthogonal
from .spectral_norm import default_dim, weight_to_matrix
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (see the module docstring)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = weight_to_matrix(weight, self.dim)
            h, w = weight_mat.shape
            with no_grad():
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        from ... import ops

        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ops.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ops.mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        from ... import ops

        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = weight_to_matrix(weight, self.dim)  # (h, w)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ops.vdot(u, ops.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize ``module.<name>`` as ``W / sigma(W)`` (see the module docstring)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = default_dim(module)
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
