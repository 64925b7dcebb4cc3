"""Walking module outputs and their autograd graph (what data-parallel wrappers ask of them).

* :func:`tensors_in`: the Tensors nested in an output (lists, tuples, dicts), for hooks
  that must see every output (FSDP's pre-backward hooks).
* :func:`reachable_leaves`: the leaves the autograd graph of some outputs reaches, for
  ``find_unused_parameters`` (a parameter it does not reach gets no gradient this iteration).
"""

from __future__ import annotations

from ...autograd.tensor import Tensor

__all__ = ["tensors_in", "reachable_leaves"]


def tensors_in(obj, out: list | None = None) -> list:
    """The Tensors in ``obj`` (a Tensor, or lists, tuples and dicts of them), appended to
    ``out`` (a new list when None) in depth-first order."""
    if out is None:
        out = []
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, list | tuple):
        for o in obj:
            tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            tensors_in(o, out)
    return out


def reachable_leaves(outputs) -> set:
    """ids of the leaf tensors the autograd graph of ``outputs`` reaches."""
    seen_fn, leaves = set(), set()
    stack = []
    for t in outputs:
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
        elif t.requires_grad:
            leaves.add(id(t))
    while stack:
        fn = stack.pop()
        if id(fn) in seen_fn:
            continue
        seen_fn.add(id(fn))
        for node in fn._edges:  # packed edges (autograd/function.py): no pair per edge
            if node is None:
                continue
            if type(node) is tuple:
                node = node[0]
            if isinstance(node, Tensor):
                leaves.add(id(node))
            else:
                stack.append(node)
    return leaves
