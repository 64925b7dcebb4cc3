"""``torch.func.grad`` / ``grad_and_value``: a function's gradient as a function.

Algorithm: the arguments named by ``argnums`` are differentiated as they come when they
require grad already (an enclosing ``grad`` made them so: that is how ``grad(grad(f))``
nests), else as fresh leaves on their arrays. The output's gradient is taken with
``autograd.grad(create_graph=True)`` whenever an enclosing computation may differentiate it
again (some differentiated argument required grad on entry), so the result carries the graph
the outer level needs; at the outermost level it is plain (no graph), as torch.func's.
Unlike torch.func this is not a functional transform over a dispatcher: tensors the function
closes over that require grad are differentiated through as usual, and no ``vmap`` exists.
"""

from __future__ import annotations

from ..autograd import Tensor
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ..autograd.tensor import _wrap


def grad(func, argnums=0, has_aux: bool = False):
    """``torch.func.grad``: ``grad(f)(*args)`` is df/d args[argnums] (a tuple for a tuple of
    argnums); with ``has_aux``, ``f`` returns ``(output, aux)`` and so does the result."""
    def wrapper(*args, **kwargs):
        g, (_, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, aux) if has_aux else g
    return wrapper


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``torch.func.grad_and_value``: ``(gradient, output)``; with ``has_aux``,
    ``(gradient, (output, aux))``."""
    def wrapper(*args, **kwargs):
        g, (out, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, (out, aux)) if has_aux else (g, out)
    return wrapper


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    single = isinstance(argnums, int)
    positions = (argnums,) if single else tuple(argnums)
    if not positions:
        raise RuntimeError("grad(f)(*args): Expected argnums to be a non-empty int or tuple of ints")
    args = list(args)
    nested = False
    for p in positions:
        if not -len(args) <= p < len(args):
            raise RuntimeError(f"grad(f)(*args): Got argnums={argnums} but only {len(args)} positional inputs")
        a = args[p]
        if not isinstance(a, Tensor):
            raise RuntimeError(f"grad(f)(*args): Expected the argument at argnums={p} to be a Tensor, got "
                               f"{type(a).__name__}")
        if a.requires_grad:
            nested = True
        else:
            args[p] = _wrap(a.array, requires_grad=True)
    with enable_grad():
        result = func(*args, **kwargs)
        if has_aux:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = result
        else:
            out, aux = result, None
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                               f"{'shape ' + str(tuple(out.shape)) if isinstance(out, Tensor) else type(out).__name__}")
        xs = [args[p] for p in positions]
        if out.requires_grad:
            gs = _autograd_grad(out, xs, create_graph=nested, allow_unused=True, materialize_grads=True)
        else:
            gs = tuple(_wrap(x.array * 0) for x in xs)
    value = out if nested else out.detach()
    return (gs[0] if single else tuple(gs)), (value, aux)
