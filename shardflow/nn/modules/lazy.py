"""Lazy modules: layers whose input size is taken from the first input (PyTorch's design).

``LazyModuleMixin`` (first base of each lazy class) registers a forward pre-hook that calls
``initialize_parameters(*args)`` at the first call: each ``UninitializedParameter`` /
``UninitializedBuffer`` is materialised with the inferred shape (on its current device and
dtype, so a ``.to(...)`` before the first call is kept), ``reset_parameters()`` initialises it
as the eager layer would, the hook is removed and the module's class becomes
``cls_to_become`` (``LazyConv2d`` -> ``Conv2d``). Until then ``state_dict()`` holds the
placeholders, and ``load_state_dict`` materialises them from the loaded shapes first (a
load-state-dict pre-hook), so a saved eager model loads into a fresh lazy one; its first call
then records the input size (``in_channels``, ``num_features``), which torch leaves at 0 (its
lazy instance norms then refuse every input).

Classes: ``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d`` (in_channels
from dim 1 of a batched input, dim 0 of an unbatched one), ``LazyBatchNorm1d/2d/3d`` and
``LazyInstanceNorm1d/2d/3d`` (num_features from ``input.shape[1]``, as torch, also for the
instance norms, whose lazy forms default to ``affine=True, track_running_stats=True``).
"""

from __future__ import annotations

import itertools

from ...autograd import Tensor, no_grad
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _BatchNorm,
    _InstanceNorm,
    _NormBase,
)

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Shape inference at the first call (module docstring); ``initialize_parameters`` is the
    subclass's part."""

    cls_to_become = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if is_lazy(buf) or keep_vars else buf.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs) -> None:
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                source = state_dict[key]
                if not is_lazy(source):
                    with no_grad():
                        param.materialize(tuple(source.shape))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. "
                           "Run a dummy forward pass to correctly initialize the modules")


def _factory(device, dtype) -> dict:
    return {"device": device, "dtype": dtype}


# ---------------------------------------------------------------- linear
class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the first input's last dimension."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False, device=device, dtype=dtype)
        self.weight = UninitializedParameter(**_factory(device, dtype))
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**_factory(device, dtype))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params() and self.in_features == 0:
            self.in_features = input.shape[-1]  # materialised by load_state_dict
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


# ---------------------------------------------------------------- convolutions
class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params() and self.in_channels == 0:
            self.in_channels = self._get_in_channels(input)  # materialised by load_state_dict
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input) -> int:
        no_batch = self._n + 1
        if input.ndim not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.ndim == no_batch + 1 else input.shape[0]


def _lazy_conv(cls):
    class LazyConv(_LazyConvXdMixin, cls):
        cls_to_become = cls

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                     padding_mode="zeros", device=None, dtype=None) -> None:
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                             device=device, dtype=dtype)
            self.weight = UninitializedParameter(**_factory(device, dtype))
            self.out_channels = out_channels
            if bias:
                self.bias = UninitializedParameter(**_factory(device, dtype))

    LazyConv.__name__ = LazyConv.__qualname__ = f"Lazy{cls.__name__}"
    LazyConv.__doc__ = f"``{cls.__name__}`` whose ``in_channels`` is taken from the first input."
    return LazyConv


def _lazy_conv_transpose(cls):
    class LazyConvTranspose(_LazyConvXdMixin, cls):
        cls_to_become = cls

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                     bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None) -> None:
            super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                             padding_mode, device=device, dtype=dtype)
            self.weight = UninitializedParameter(**_factory(device, dtype))
            self.out_channels = out_channels
            if bias:
                self.bias = UninitializedParameter(**_factory(device, dtype))

    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = f"Lazy{cls.__name__}"
    LazyConvTranspose.__doc__ = f"``{cls.__name__}`` whose ``in_channels`` is taken from the first input."
    return LazyConvTranspose


LazyConv1d = _lazy_conv(Conv1d)
LazyConv2d = _lazy_conv(Conv2d)
LazyConv3d = _lazy_conv(Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d)


# ---------------------------------------------------------------- normalisation
class _LazyNormBase(LazyModuleMixin, _NormBase):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if self.affine:
            self.weight = UninitializedParameter(**_factory(device, dtype))
            if bias:  # bias=False: a scale only (torch 2.13's norms)
                self.bias = UninitializedParameter(**_factory(device, dtype))
        if self.track_running_stats:
            from ...ops.creation import tensor

            self.running_mean = UninitializedBuffer(**_factory(device, dtype))
            self.running_var = UninitializedBuffer(**_factory(device, dtype))
            self.num_batches_tracked = tensor(0, dtype="int64", device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params() and self.num_features == 0:
            # materialised by load_state_dict: take the size too (torch leaves 0, and its
            # lazy instance norms then refuse every input)
            self.num_features = input.shape[1]
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if isinstance(t, Tensor) and is_lazy(t):
                    t.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(cls, base):
    class LazyNorm(_LazyNormBase, base):
        cls_to_become = cls
        _check_input_dim = getattr(cls, "_check_input_dim", base._check_input_dim)

    LazyNorm.__name__ = LazyNorm.__qualname__ = f"Lazy{cls.__name__}"
    LazyNorm.__doc__ = f"``{cls.__name__}`` whose ``num_features`` is taken from the first input."
    if base is _InstanceNorm:
        LazyNorm.spatial = cls.spatial
    return LazyNorm


LazyBatchNorm1d = _lazy_norm(BatchNorm1d, _BatchNorm)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, _BatchNorm)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, _BatchNorm)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, _InstanceNorm)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, _InstanceNorm)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, _InstanceNorm)
