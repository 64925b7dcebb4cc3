"""``torch.distributed.device_mesh``'s path: a ``DeviceMesh`` is a ``placement``
(``placement.py``; docs/GLOBAL.md)."""

from .placement import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
