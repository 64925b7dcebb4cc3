"""``torch.autograd.graph`` path: ``Node``, the type of ``tensor.grad_fn``.

A shardflow graph node is a ``Function`` instance (``function.py``); ``Node`` is an abstract
base that every ``Function`` subclass counts as (``isinstance(t.grad_fn, Node)`` is True, as in
torch), so type checks in programs work. torch's other ``graph`` helpers (saved-tensor hooks,
``register_multi_grad_hook``, ``GradientEdge``) need the backward engine's cooperation and
are not built here.
"""

from __future__ import annotations

import abc

from .function import Function

__all__ = ["Node"]


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
