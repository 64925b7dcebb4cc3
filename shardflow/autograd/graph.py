"""``torch.autograd.graph``: ``Node`` (the type of ``tensor.grad_fn``) and the saved-tensor
hooks (``saved_tensors_hooks``, ``save_on_cpu``, ``disable_saved_tensors_hooks``).

A shardflow graph node is a ``Function`` instance (``function.py``); ``Node`` is an abstract
base that every ``Function`` subclass counts as (``isinstance(t.grad_fn, Node)`` is True, as in
torch), so type checks in programs work.

``register_multi_grad_hook`` and node hooks (``grad_fn.register_hook`` / ``register_prehook``)
are ``graph_hooks.py``. ``GradientEdge`` / ``get_gradient_edge`` name a tensor's place in the
graph (its node and output number; a leaf's node is an ``AccumulateGrad`` view of it) and can
be given to ``autograd.grad`` as inputs.

Saved-tensor hooks are run by ``saved_hooks.py`` (what counts as a saved tensor, where they
are packed and unpacked); the classes here are torch's context managers over it.
"""

from __future__ import annotations

import abc
import contextlib
from typing import NamedTuple

from . import saved_hooks
from .function import AccumulateGrad, Function
from .graph_hooks import register_multi_grad_hook
from .tensor import Tensor, _wrap

__all__ = ["GradientEdge", "Node", "allow_mutation_on_saved_tensors", "disable_saved_tensors_hooks",
           "get_gradient_edge", "increment_version", "register_multi_grad_hook", "save_on_cpu",
           "saved_tensors_hooks"]


class Node(abc.ABC):
    """The abstract type of autograd graph nodes; shardflow's nodes are ``Function`` instances."""

    @classmethod
    def __subclasshook__(cls, subclass):
        if cls is Node and issubclass(subclass, Function):
            return True
        return NotImplemented

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name, torch's (``'MulBackward0'``; node_names.py)."""


class GradientEdge(NamedTuple):
    """A place in the graph: ``node`` (a ``Function``, or an ``AccumulateGrad`` for a leaf) and
    the ``output_nr`` of that node; what ``get_gradient_edge`` returns."""

    node: object
    output_nr: int
    ownership_token: object = None


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge of the graph that ``tensor``'s gradient flows along (torch's function); it may
    stand for the tensor in ``autograd.grad(outputs, inputs=...)``."""
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require "
            "gradients (fix: set requires_grad=True or use a tensor computed from one that does)"
        )
    if tensor.grad_fn is None:
        return GradientEdge(AccumulateGrad(tensor), 0)
    return GradientEdge(tensor.grad_fn, tensor._output_nr)


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place change does: a node that saved it refuses to run backward afterwards."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        t._version_counter[0] += 1


class allow_mutation_on_saved_tensors:
    """Inside, tensors saved for backward may be changed in place afterwards; backward still
    sees the values they had when saved. torch clones a saved tensor when it is first
    mutated; shardflow clones every saved tensor when it is saved (saved-tensor hooks that
    copy, with the in-place check dropped for what they copied): same gradients, more
    memory while the graph lives. Returns the context object, as torch."""

    def __enter__(self):
        saved_hooks.push(_copy_array, _wrap, independent=True)
        return self

    def __exit__(self, *exc) -> None:
        saved_hooks.pop()


def _copy_array(t: Tensor):
    return t.array.copy()


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
