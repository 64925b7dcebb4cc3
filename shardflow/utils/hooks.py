"""``torch.utils.hooks`` path: ``RemovableHandle`` is the handle every shardflow
``register_*_hook`` returns (``shardflow.autograd.removable_handle.RemovableHandle``; Tensor
and node hook handles are instances of a subclass), so a program that makes its own handles
for its own hook dicts (``RemovableHandle(self._hooks)``) gets the same class."""

from __future__ import annotations

from ..nn.module import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook"]


def unserializable_hook(f):
    """Mark ``f`` as a hook that need not survive serialization (torch's decorator: it sets
    ``f.__torch_unserializable__ = True`` and returns ``f``)."""
    f.__torch_unserializable__ = True
    return f
