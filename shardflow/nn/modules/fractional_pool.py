"""``nn.FractionalMaxPool2d`` / ``nn.FractionalMaxPool3d``: max pooling over pseudo-random
overlapping windows whose output size is ``output_size`` or ``output_ratio`` times the input's
(the algorithm is in ``nn/functional_fractional.py``). Fixed windows: pass ``_random_samples``
(``(N, C, 2)`` / ``(N, C, 3)`` in [0, 1), kept as a buffer); otherwise each call draws new ones."""

from __future__ import annotations

from .. import functional as F
from ..module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:
        super().__init__()
        nd, name = self._nd, type(self).__name__
        self.kernel_size = _ntuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, nd) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        pool = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                    _random_samples=self._random_samples)


def _ntuple(v, n: int):
    return tuple(v) if isinstance(v, list | tuple) else (v,) * n


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling over ``(N?, C, H, W)``."""

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over ``(N?, C, T, H, W)``."""

    _nd = 3
