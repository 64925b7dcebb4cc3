"""``torch.distributed.tensor.device_mesh``'s path: a ``DeviceMesh`` is a ``placement``."""

from ..placement import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
