"""``torch.autograd.graph`` path: ``Node``, the type of ``tensor.grad_fn``; ``save_on_cpu``
and ``disable_saved_tensors_hooks``.

A shardflow graph node is a ``Function`` instance (``function.py``); ``Node`` is an abstract
base that every ``Function`` subclass counts as (``isinstance(t.grad_fn, Node)`` is True, as in
torch), so type checks in programs work.

Saved-tensor hooks: the engine saves a node's inputs as arrays on the node itself and calls no
pack/unpack hooks, so ``saved_tensors_hooks`` (user pack/unpack functions) is not built: hooks
that are never called would silently do nothing. What is honest without them:

* ``save_on_cpu`` is a no-op context manager. For CPU tensors it is exactly torch's behaviour
  (their saved copies already live in host memory); for CUDA (CuPy) tensors the saved
  activations stay on the device, so the values are right but no GPU memory is saved.
* ``disable_saved_tensors_hooks(message)``: inside it, entering ``save_on_cpu`` raises
  ``RuntimeError(message)``, as in torch.

``register_multi_grad_hook`` and ``GradientEdge`` are not built: "once per backward when all /
any of these gradients are computed" needs the engine to say which tensors a backward pass
will reach and when it ends, which tensor hooks cannot tell.
"""

from __future__ import annotations

import abc
import contextlib
import threading

from .function import Function

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu"]


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


_disabled = threading.local()


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Inside, entering ``save_on_cpu`` raises ``RuntimeError(error_message)`` (torch's rule
    for saved-tensor hooks; the innermost message wins)."""
    previous = getattr(_disabled, "message", None)
    _disabled.message = error_message
    try:
        yield
    finally:
        _disabled.message = previous


class save_on_cpu:
    """``torch.autograd.graph.save_on_cpu(pin_memory=False, device_type='cuda')``: a no-op
    context manager (module docstring: exact for CPU tensors; CUDA activations stay on the
    device)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory = pin_memory
        self.device_type = device_type

    def __enter__(self):
        message = getattr(_disabled, "message", None)
        if message is not None:
            raise RuntimeError(message)
        return self

    def __exit__(self, *exc) -> None:
        return None
