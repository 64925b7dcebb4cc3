"""``torch.distributed.tensor.parallel.loss``'s path."""

from ...tensor_parallel import loss_parallel

__all__ = ["loss_parallel"]
