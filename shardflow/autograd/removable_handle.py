"""``RemovableHandle``: what every ``register_*_hook`` returns (``torch.utils.hooks``'s).

It lives in the autograd layer so that a Tensor's and a graph node's hook handles (kept in a
list, not a dict: ``tensor._RemovableHandle``, a subclass) are instances of it too, as in
torch, where ``isinstance(x.register_hook(f), torch.utils.hooks.RemovableHandle)`` holds.
``nn.removable_handle`` re-exports it."""

from __future__ import annotations

from .hook_ids import next_handle_id

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """Returned by ``register_*_hook``; ``handle.remove()`` unregisters the hook."""

    def __init__(self, *hook_dicts, hooks_dict=None, extra_dict=None):
        # torch's signature is (hooks_dict, *, extra_dict=None): extra_dict is one more dict (or
        # a list of them) whose entry under this handle's id goes too (a hook's kwargs flag)
        extras = [] if extra_dict is None else extra_dict if isinstance(extra_dict, list) else [extra_dict]
        named = () if hooks_dict is None else (hooks_dict,)
        self.hook_dicts = (*named, *hook_dicts, *extras)
        # one counter with Tensor and node hook handles, as torch's (autograd/hook_ids.py)
        self.id = next_handle_id()

    def remove(self) -> None:
        for d in self.hook_dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
