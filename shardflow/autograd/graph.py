"""``torch.autograd.graph``: ``Node`` (the type of ``tensor.grad_fn``) and the saved-tensor
hooks (``saved_tensors_hooks``, ``save_on_cpu``, ``disable_saved_tensors_hooks``).

A shardflow graph node is a ``Function`` instance (``function.py``); ``Node`` is an abstract
base that every ``Function`` subclass counts as (``isinstance(t.grad_fn, Node)`` is True, as in
torch), so type checks in programs work.

Saved-tensor hooks are run by ``saved_hooks.py`` (what counts as a saved tensor, where they
are packed and unpacked); the classes here are torch's context managers over it.
"""

from __future__ import annotations

import abc
import contextlib

from . import saved_hooks
from .function import Function

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]


class Node(abc.ABC):
    """The abstract type of autograd graph nodes; shardflow's nodes are ``Function`` instances."""

    @classmethod
    def __subclasshook__(cls, subclass):
        if cls is Node and issubclass(subclass, Function):
            return True
        return NotImplemented

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name (torch: ``'MulBackward0'``; shardflow: the op's Function class name)."""


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Inside, registering saved-tensor hooks (``saved_tensors_hooks``, ``save_on_cpu``)
    raises ``RuntimeError(error_message)``; entering it while this thread has hooks active
    raises the same (torch's rule; the innermost message wins)."""
    previous = saved_hooks.enter_disabled(error_message)
    try:
        yield
    finally:
        saved_hooks.exit_disabled(previous)


class saved_tensors_hooks:
    """``torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)``: while inside,
    every tensor an op saves for backward is passed to ``pack_hook(tensor)`` when it is saved,
    and what that returned to ``unpack_hook(packed)`` when backward needs it, which must
    return a Tensor of the same values (saved_hooks.py: what counts as saved, and why the
    number of calls can differ from torch's). Hooks nest (the innermost applies) and belong
    to the thread that entered them."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        saved_hooks.push(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc) -> None:
        saved_hooks.pop()


class save_on_cpu(saved_tensors_hooks):
    """``torch.autograd.graph.save_on_cpu(pin_memory=False, device_type='cuda')``: saved
    tensors are kept in host memory (``tensor.cpu()``) and moved back to their device when
    backward needs them (torch's hooks). For CPU tensors both are no-ops, as in torch; for
    CuPy tensors the activations leave GPU memory. ``pin_memory`` is accepted (host copies are
    plain NumPy arrays)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory = pin_memory
        self.device_type = device_type

        def pack_to_cpu(tensor):
            return tensor.device, tensor.cpu()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)
