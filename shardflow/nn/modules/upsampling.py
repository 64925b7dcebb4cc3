"""``torch.nn.modules.upsampling`` path: ``Upsample`` and its 2-d forms (defined in ``sampling.py``)."""

from .module import Module
from .sampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "Module"]
