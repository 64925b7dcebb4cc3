"""``DataParallel`` (``torch.nn.DataParallel``) as a one-process pass-through.

PyTorch's DataParallel copies the module onto every visible GPU inside one process, splits
the batch along ``dim`` and gathers the outputs; on a machine without GPUs it only keeps the
module and calls it. shardflow is the latter everywhere: ``forward(*inputs, **kwargs)`` is
``self.module(*inputs, **kwargs)`` on the module's own device. The wrapper is what programs
rely on around it: the wrapped model is ``.module``, and ``state_dict()`` keys carry the
``module.`` prefix (the module is the child named ``module``), so checkpoints saved through a
DataParallel load into one (and ``.module.state_dict()`` has the plain keys), as in PyTorch.

``device_ids`` is ``[]`` without CUDA (PyTorch's CPU answer), otherwise the given ids (default:
every visible GPU). With more than one id, a warning says that the batch is not split: data
parallelism over several GPUs is ``DistributedDataParallel`` under ``shardflow run -n N``
(docs/DISTRIBUTED.md), which PyTorch also recommends over DataParallel.
"""

from __future__ import annotations

import warnings

from ... import accelerator
from ...backend import cuda_is_available
from ...backend import device as _device
from ..module import Module

__all__ = ["DataParallel"]


def _index(d) -> int:
    return d if isinstance(d, int) else (_device(d).index or 0)


class DataParallel(Module):
    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel wraps a Module, got {type(module).__name__}")
        self.module = module
        self.dim = dim
        if not cuda_is_available():
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(accelerator.device_count()))
        self.device_ids = [_index(d) for d in device_ids]
        self.output_device = _index(output_device) if output_device is not None else (
            self.device_ids[0] if self.device_ids else None)
        if len(self.device_ids) > 1:
            warnings.warn(
                f"shardflow's DataParallel runs the module in this process on its own device and does not "
                f"split the batch over devices {self.device_ids}; for several GPUs use "
                "DistributedDataParallel with `shardflow run -n N script.py`",
                stacklevel=2,
            )

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
