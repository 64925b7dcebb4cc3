"""``RemovableHandle`` at its nn path (defined in ``autograd.removable_handle``: Tensor hook
handles are instances of it too)."""

from ..autograd.removable_handle import RemovableHandle

__all__ = ["RemovableHandle"]
