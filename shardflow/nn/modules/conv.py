"""``Conv1d``/``Conv2d``/``Conv3d`` and ``ConvTranspose1d``/``ConvTranspose2d``.

Weights are ``(out_channels, in_channels // groups, *kernel_size)`` (transposed:
``(in_channels, out_channels // groups, *kernel_size)``), initialised like PyTorch with
``kaiming_uniform_(a=sqrt(5))`` and the bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
``padding_mode`` other than ``'zeros'`` pads explicitly with ``F.pad`` (reflect, replicate,
circular) and then convolves with no padding, as PyTorch does.
"""

from __future__ import annotations

import math

from .. import functional as F
from .. import init
from ..module import Module
from ..parameter import Parameter
from ._utils import _pair, _single, _triple, empty, register_bias

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _n = 2
    _tuple = staticmethod(_pair)
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None,
                 output_padding=0) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError(f"in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups != 0:
            raise ValueError(f"out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        t = self._tuple
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = t(kernel_size)
        self.stride = t(stride)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of 'valid', 'same'")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = t(padding)
        self.dilation = t(dilation)
        self.transposed = self._transposed
        self.output_padding = t(output_padding)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(self.kernel_size)
            if padding == "same":
                for d, k, i in zip(self.dilation, self.kernel_size,
                                   range(len(self.kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in range(2)]
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(empty(*shape, device=device, dtype=dtype))
        register_bias(self, bias, out_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**{k: getattr(self, k) for k in (
            "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
            "output_padding", "groups", "padding_mode")})

    def _conv_forward(self, input, weight, bias):
        conv = getattr(F, f"conv{self._n}d")
        if self.padding_mode != "zeros":
            mode = self.padding_mode
            x = F.pad(input, self._reversed_padding_repeated_twice, mode=mode)
            return conv(x, weight, bias, self.stride, self._tuple(0), self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvNd):
    """1-D convolution over ``(N, C_in, L)`` (or unbatched ``(C_in, L)``)."""

    _n = 1
    _tuple = staticmethod(_single)


class Conv2d(_ConvNd):
    """2-D convolution over ``(N, C_in, H, W)``."""

    _n = 2
    _tuple = staticmethod(_pair)


class Conv3d(_ConvNd):
    """3-D convolution over ``(N, C_in, D, H, W)``."""

    _n = 3
    _tuple = staticmethod(_triple)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input, output_size):
        """PyTorch's rule: ``output_size`` (spatial sizes, optionally with the leading batch
        and channel sizes) picks ``output_padding = size - min_size`` per spatial dim, where
        ``min_size = (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + 1`` and the
        size must lie in ``[min_size, min_size + stride - 1]``."""
        if output_size is None:
            return self.output_padding
        n = self._n
        non_spatial = 2 if input.ndim == n + 2 else 1
        output_size = [int(s) for s in output_size]
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                f"{non_spatial + n} elements (got {len(output_size)})")
        spatial = tuple(input.shape[non_spatial:])
        min_sizes = [(spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        max_sizes = [m + self.stride[d] - 1 for d, m in enumerate(min_sizes)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{min_sizes} to {max_sizes} (for an input of {list(spatial)})")
        return tuple(size - lo for size, lo in zip(output_size, min_sizes))

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        conv = getattr(F, f"conv_transpose{self._n}d")
        return conv(input, self.weight, self.bias, self.stride, self.padding,
                    output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    _n = 1
    _tuple = staticmethod(_single)


class ConvTranspose2d(_ConvTransposeNd):
    _n = 2
    _tuple = staticmethod(_pair)


class ConvTranspose3d(_ConvTransposeNd):
    _n = 3
    _tuple = staticmethod(_triple)
