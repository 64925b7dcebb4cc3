"""Shared helpers of the ``torch.func`` transforms: ``argnums`` handling, the fresh
differentiable inputs, and when a result must keep a graph.

A transform here runs ``func`` on ordinary shardflow Tensors and differentiates with
``shardflow.autograd.grad`` (there are no functorch levels or wrapper tensors). torch's
transforms always differentiate with ``create_graph=True`` and then unwrap, so a result keeps
a graph exactly when it depends on tensors from outside the transform that require grad (an
outer transform's inputs in ``grad(grad(f))``, an input that required grad, a parameter the
function closes over). Here that is decided by walking the output's graph
(``reaches_outside``): only then are gradients computed with ``create_graph=True`` (the
higher-order engine) and results kept; otherwise the first-order engine is used and results
are detached, as torch's would not require grad. Nothing is decided under ``no_grad``.
"""

from __future__ import annotations

import functools

from ..autograd import grad_mode
from ..autograd.tensor import Tensor
from ..utils._pytree import tree_flatten, tree_unflatten


def differentiating():
    """The body of a differentiating transform runs with grad mode on (torch: the transforms
    differentiate ``func`` even under ``no_grad``)."""
    return grad_mode.enable_grad()


def reaches_outside(tensors, private) -> bool:
    """True when the graph of any of ``tensors`` reaches a tensor that requires grad and is not
    one of the transform's own fresh inputs ``private`` (walks ``Function._edges``)."""
    own = {id(x) for x in private}
    stack, seen = [], set()
    for t in tensors:
        if not isinstance(t, Tensor) or not t.requires_grad:
            continue
        if t.grad_fn is None:
            if id(t) not in own:
                return True
        elif id(t.grad_fn) not in seen:
            seen.add(id(t.grad_fn))
            stack.append(t.grad_fn)
    while stack:
        fn = stack.pop()
        for node in fn._edges:
            if type(node) is tuple:
                node = node[0]
            if node is None:
                continue
            if isinstance(node, Tensor):
                if id(node) not in own:
                    return True
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append(node)
    return False


def validate_argnums(argnums, num_args: int):
    """torch's argnums checks: an int or a non-empty tuple of unique ints, each in range
    (negative counts from the end); returns them wrapped to non-negative."""
    def one(a):
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if 0 <= a < num_args:
            return a
        if -num_args <= a < 0:
            return a + num_args
        raise RuntimeError(f"Got argnum={a}, but only {num_args} positional inputs")

    if isinstance(argnums, int) and not isinstance(argnums, bool):
        return one(argnums)
    if isinstance(argnums, tuple):
        wrapped = tuple(one(a) for a in argnums)
        if len(wrapped) == 0:
            raise RuntimeError("argnums must be non-empty")
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return wrapped
    raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")


def slice_argnums(args: tuple, argnums):
    """The differentiated part of ``args``: the argument itself for an int, a tuple for a tuple."""
    argnums = validate_argnums(argnums, len(args))
    if isinstance(argnums, int):
        return argnums, args[argnums]
    return argnums, tuple(args[i] for i in argnums)


def replace_argnums(args: tuple, argnums, new):
    if isinstance(argnums, int):
        return tuple(new if i == argnums else a for i, a in enumerate(args))
    return tuple(new[argnums.index(i)] if i in argnums else a for i, a in enumerate(args))


def make_differentiable(tree):
    """Fresh inputs to differentiate with respect to: ``(new_tree, new_leaves)``. A leaf that
    already requires grad gets a differentiable alias (``view_as``), so gradients still reach
    the original through ordinary autograd and two arguments holding one tensor get separate
    gradients; any other gets a detached leaf with ``requires_grad=True``."""
    leaves, spec = tree_flatten(tree)
    new = []
    for x in leaves:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if x.requires_grad:
            new.append(x.view_as(x))
        else:
            if not (x.is_floating_point() or x.is_complex()):
                raise RuntimeError(
                    f"only Tensors of floating point and complex dtype can be differentiated, got a "
                    f"Tensor of dtype {x.dtype}; pass float inputs (x.float()) or leave this argument "
                    "out of argnums")
            new.append(x.detach().requires_grad_(True))
    return tree_unflatten(new, spec), new


def release(tree, private):
    """``tree`` with every Tensor leaf that does not depend on outside tensors (see
    ``reaches_outside``) detached: the transform's private graph must not show in results."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if isinstance(x, Tensor) and not reaches_outside([x], private) else x
                           for x in leaves], spec)


def detach_all(tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def split_aux(output, has_aux: bool, api: str):
    """``(output, aux)`` of a transformed function's result: with ``has_aux`` it must be a
    pair (torch's error otherwise, prefixed by ``api``); without, aux is None."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def func_name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({func_name(func.func)}, ...)"
    return repr(func)
