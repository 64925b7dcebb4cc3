"""``torch.func.debug_unwrap``: the plain tensor under functorch's wrappers, for debugging.

shardflow's transforms run ``func`` on ordinary Tensors (no wrapper tensors), so outside
``vmap`` and inside ``grad``/``vjp``/``jacrev``, the tensor is its own unwrapped form, which
is what torch returns there (same values; one difference: inside ``grad`` torch's unwrapped
tensor does not require grad, while the tensor returned here is the transform's input, which
does). Inside ``vmap`` torch returns the whole batched
tensor, while shardflow's loop-based vmap only holds one sample: that case raises
NotImplementedError rather than silently returning a slice."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import _vmap

__all__ = ["debug_unwrap"]


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """``tensor`` itself (there are no wrappers to remove; ``recurse`` has nothing to recurse
    through); NotImplementedError inside ``vmap`` (module docstring)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"debug_unwrap(): expected a Tensor, got {type(tensor).__name__}")
    if _vmap._active[0]:
        raise NotImplementedError(
            "torch.func.debug_unwrap inside vmap returns the whole batched tensor in torch; "
            "shardflow's vmap runs the function once per sample and has no batched tensor. "
            "Inspect the tensor passed to vmap outside the mapped function instead")
    return tensor
