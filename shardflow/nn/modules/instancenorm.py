"""``torch.nn.modules.instancenorm`` path: the InstanceNorm layers (defined in ``normalization.py``)."""

from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "_InstanceNorm", "_NormBase"]
