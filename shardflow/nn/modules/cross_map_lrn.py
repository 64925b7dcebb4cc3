"""``nn.CrossMapLRN2d``: Lua torch's local response normalisation across channels, kept by
PyTorch as a legacy module (``LocalResponseNorm`` is the modern one, in ``normalization.py``).

``y = x * scale^-beta`` with ``scale = k + alpha / size * window_sum(x^2)`` over channels.
The window is PyTorch's running sum, reproduced as it is rather than as a centred window: it
starts as channels ``[0, pre_pad)`` (``pre_pad = (size - 1) // 2 + 1``), each next channel adds
channel ``c + pre_pad - 1`` (while there is one) and drops ``c - pre_pad`` only once
``c > pre_pad``, so channel 0's square stays in every later window. The backward is PyTorch's
own formula too (``grad * scale^-beta - 2 alpha beta / size * x * sum over a window of size
channels of grad * y / scale``), which is not the exact derivative of that forward, and, as
PyTorch's, it raises for ``size=1``; a program that trains with this module gets PyTorch's
numbers. 4-D input only (ValueError
otherwise, as PyTorch's).
"""

from __future__ import annotations

from ...autograd import Function
from ...backend import get_array_module
from ..module import Module

__all__ = ["CrossMapLRN2d"]


class _CrossMapLRN2dFunction(Function):
    save_inputs = ()

    def forward(self, x, size=5, alpha=1e-4, beta=0.75, k=1.0):
        xp = get_array_module(x)
        sq = x * x
        channels = x.shape[1]
        pre_pad = int((size - 1) / 2 + 1)
        scale = xp.empty_like(x)
        scale[:, 0] = sq[:, : min(pre_pad, channels)].sum(axis=1)
        for c in range(1, channels):  # PyTorch's running window (module docstring)
            scale[:, c] = scale[:, c - 1]
            if c < channels - pre_pad + 1:
                scale[:, c] += sq[:, c + pre_pad - 1]
            if c > pre_pad:
                scale[:, c] -= sq[:, c - pre_pad]
        scale = scale * (alpha / size) + k
        out = xp.power(scale, -beta) * x
        self.x, self.out, self.scale = x, out, scale
        self.size, self.alpha, self.beta = size, alpha, beta
        return out

    def backward(self, g):
        xp = get_array_module(g)
        x, out, scale, size = self.x, self.out, self.scale, self.size
        n, channels = x.shape[:2]
        start = int(size - (size - 1) / 2)  # PyTorch's inversePrePad
        if start + channels > channels + size - 1:  # size 1: PyTorch's backward cannot run either
            raise RuntimeError(f"start ({start}) + length ({channels}) exceeds dimension size ({channels + size - 1}). "
                               "(CrossMapLRN2d's backward needs size >= 2, as in PyTorch)")
        padded = xp.zeros((n, channels + size - 1) + x.shape[2:], dtype=x.dtype)
        padded[:, start:start + channels] = g * out / scale
        # window sums of `size` padded channels starting at c, for every c (a cumulative sum)
        csum = xp.concatenate([xp.zeros_like(padded[:, :1]), xp.cumsum(padded, axis=1)], axis=1)
        window = csum[:, size:size + channels] - csum[:, :channels]
        return xp.power(scale, -self.beta) * g - (2 * self.alpha * self.beta / size) * x * window


class CrossMapLRN2d(Module):
    """PyTorch's ``nn.CrossMapLRN2d(size, alpha=1e-4, beta=0.75, k=1)`` on (N, C, H, W) input
    (see the module docstring for its window and backward)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return _CrossMapLRN2dFunction.apply(input, size=self.size, alpha=self.alpha, beta=self.beta, k=self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
