"""``torch.distributed.tensor.parallel.style``'s path."""

from ...tensor_parallel import (
    ColwiseParallel,
    ParallelStyle,
    PrepareModuleInput,
    PrepareModuleInputOutput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
)

__all__ = [
    "ParallelStyle", "RowwiseParallel", "SequenceParallel", "ColwiseParallel",
    "PrepareModuleInput", "PrepareModuleInputOutput", "PrepareModuleOutput",
]
