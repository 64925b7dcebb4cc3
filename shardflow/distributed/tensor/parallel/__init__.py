"""``torch.distributed.tensor.parallel``'s path: the styles and ``parallelize_module`` of
``tensor_parallel.py`` (PyTorch 2.13's signatures and semantics, docs/GLOBAL.md)."""

from ...tensor_parallel import (
    ColwiseParallel,
    ParallelStyle,
    PrepareModuleInput,
    PrepareModuleInputOutput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
    loss_parallel,
    parallelize_module,
)

__all__ = [
    "ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleInputOutput",
    "PrepareModuleOutput", "RowwiseParallel", "SequenceParallel", "parallelize_module",
    "loss_parallel",
]
