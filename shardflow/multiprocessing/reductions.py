"""How ``multiprocessing`` pickles a Tensor: as a view of shared memory (PyTorch's
``torch.multiprocessing.reductions``).

``init_reductions()`` registers ``reduce_tensor`` for ``Tensor``, ``nn.Parameter`` and
``nn.Buffer`` with ``multiprocessing.reduction.ForkingPickler`` (its ``register`` API), the
pickler ``multiprocessing`` uses for ``Queue``/``SimpleQueue``/``Pipe`` messages, ``Pool``
tasks and results, and the ``Process`` object of a spawn or forkserver child. Plain
``pickle``, ``copy`` and ``shardflow.save`` are unaffected (they copy the values).

``reduce_tensor(t)`` first moves ``t`` into shared memory in place (``t.share_memory_()``:
from then on the sender's tensor is shared too, as in PyTorch), then sends where its
elements are, never the elements: the segment (its descriptor through ``DupFd``, or its
name plus a reference for the message, see ``backend/shared_memory.py``), the byte offset,
shape, strides, dtype and ``requires_grad``. The receiver maps the segment (or reuses its
mapping when it has one, e.g. a tensor coming back to where it was made) and builds a
Tensor viewing it, of the same class. ``.grad`` and hooks are not sent (PyTorch's rule).
"""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np

from ..autograd import Tensor
from ..backend import shared_memory
from ..nn.parameter import Buffer, Parameter

__all__ = ["init_reductions", "reduce_tensor"]


def reduce_tensor(t: Tensor):
    """``ForkingPickler`` reducer: see the module docstring."""
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue).")
    t.share_memory_()  # raises for CUDA and global tensors, saying why
    array = t.array
    layout = (array.shape, array.strides, array.dtype)
    state = {"requires_grad": t.requires_grad}
    if isinstance(t, Buffer):
        state["persistent"] = t.persistent
    segment, offset = shared_memory.location(array)
    if segment is None:
        return _rebuild_empty, (type(t), layout, state)
    if segment.kind == "fd":
        return _rebuild_fd, (type(t), DupFd(segment.fd), segment.key, offset, layout, state)
    shared_memory.add_reference(segment.name, segment.directory, +1)  # the message's reference
    return _rebuild_named, (type(t), segment.name, segment.directory, offset, layout, state)


def _rebuild_fd(cls, dup, key, offset, layout, state):
    segment = shared_memory.cached(key)
    if segment is not None:
        _discard(dup)
    else:
        segment = shared_memory.attach_fd(dup.detach(), key)
    shape, strides, dtype = layout
    return _tensor(cls, shared_memory.array_in(segment, offset, shape, strides, dtype), state)


def _discard(dup) -> None:
    """Release the sender's duplicate of a descriptor this process already maps. A sender
    that has exited took its duplicate with it: nothing to release then."""
    try:
        fd = dup.detach()
    except (OSError, EOFError, multiprocessing.AuthenticationError):
        return
    os.close(fd)


def _rebuild_named(cls, name, directory, offset, layout, state):
    segment = shared_memory.attach_named(name, directory)
    shape, strides, dtype = layout
    return _tensor(cls, shared_memory.array_in(segment, offset, shape, strides, dtype), state)


def _rebuild_empty(cls, layout, state):
    shape, _, dtype = layout
    return _tensor(cls, shared_memory.empty_shared(shape, dtype), state)


def _tensor(cls, array: np.ndarray, state) -> Tensor:
    t = Tensor(array)
    if cls is Parameter:
        return Parameter(t, requires_grad=state["requires_grad"])
    if cls is Buffer:
        return Buffer(t, persistent=state["persistent"])
    t.requires_grad = state["requires_grad"]
    return t


def init_reductions() -> None:
    """Register ``reduce_tensor`` with ``ForkingPickler`` (idempotent)."""
    for cls in (Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
