"""``torch.distributed.tensor.parallel.api``'s path."""

from ...tensor_parallel import parallelize_module

__all__ = ["parallelize_module"]
