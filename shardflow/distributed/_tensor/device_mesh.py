"""``torch.distributed._tensor.device_mesh``'s path (PyTorch's tensor-parallel examples import
``init_device_mesh`` from here)."""

from ..placement import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
