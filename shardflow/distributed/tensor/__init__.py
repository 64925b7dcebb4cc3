"""``torch.distributed.tensor``'s path (re-exports, docs/COMPAT.md): a DTensor is a global
tensor (docs/GLOBAL.md), ``Shard``/``Replicate``/``Partial`` are the sbp values
``split(d)``/``broadcast``/``partial_sum``, a ``DeviceMesh`` is a ``placement``."""

from ..global_tensor import DTensor, distribute_module, distribute_tensor
from ..placement import DeviceMesh, init_device_mesh
from ..sbp import Partial, Placement, Replicate, Shard
from ._factories import empty, full, ones, rand, randn, zeros

__all__ = [
    "DTensor", "distribute_tensor", "distribute_module", "Shard", "Replicate", "Partial",
    "Placement", "ones", "empty", "full", "rand", "randn", "zeros", "DeviceMesh",
    "init_device_mesh",
]
