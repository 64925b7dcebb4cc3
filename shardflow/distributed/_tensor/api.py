"""``torch.distributed._tensor.api``'s path."""

from ..global_tensor import DTensor, distribute_module, distribute_tensor

__all__ = ["DTensor", "distribute_tensor", "distribute_module"]
