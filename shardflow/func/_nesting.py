"""Shared state and helpers of the ``torch.func`` transforms: the nesting depth of the
differentiating transforms, ``argnums`` handling, and the differentiable copies of inputs.

A transform here runs ``func`` on ordinary shardflow Tensors and differentiates with
``shardflow.autograd.grad`` (there are no functorch levels or wrapper tensors). Whether a
gradient must itself be differentiable (``create_graph=True``, the higher-order engine) is
decided per call: it must when grad mode is on and either another differentiating transform
is running around this one (``grad(grad(f))``, ``jacfwd(jacrev(f))``) or an input already
requires grad (the result is then differentiated by ordinary autograd, as in torch).
"""

from __future__ import annotations

import contextlib
import functools
import threading

from ..autograd import grad_mode
from ..autograd.tensor import Tensor
from ..utils._pytree import tree_flatten, tree_unflatten

_state = threading.local()


def transform_depth() -> int:
    return getattr(_state, "depth", 0)


@contextlib.contextmanager
def differentiating():
    """Mark the body as running inside a differentiating transform (grad, vjp, jacrev ...)."""
    _state.depth = transform_depth() + 1
    try:
        with grad_mode.enable_grad():
            yield
    finally:
        _state.depth -= 1


def needs_graph(tensors) -> bool:
    """True when gradients computed now must carry a graph (see the module docstring).
    Call before entering ``differentiating()``."""
    if not grad_mode.is_grad_enabled():
        return False
    return transform_depth() > 0 or any(isinstance(t, Tensor) and t.requires_grad for t in tensors)


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


def detach_tree(tree):
    """``tree`` with every Tensor leaf detached (results of a transform that is not
    differentiated again must not carry the transform's private graph)."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def func_name(func) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({func_name(func.func)}, ...)"
    return repr(func)
