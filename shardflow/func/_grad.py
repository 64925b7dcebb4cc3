"""``torch.func.grad``, ``grad_and_value`` and ``vjp`` over ``shardflow.autograd.grad``.

Algorithm: the differentiated arguments (``argnums``, pytrees of Tensors) are replaced by fresh
differentiable inputs (``_nesting.make_differentiable``), ``func`` runs under grad mode, and
``autograd.grad`` gives the gradients (zeros where the output does not depend on an input, as
torch's transforms do). When the output depends on tensors from outside the transform that
require grad (``_nesting.reaches_outside``: an outer transform's inputs in ``grad(grad(f))``, an
input or a closed-over parameter that requires grad) the gradients are computed with
``create_graph=True`` (the higher-order engine, ``autograd/higher_order.py``) and keep that
graph, as torch's do; otherwise results are detached.
"""

from __future__ import annotations

import functools

from .. import ops
from ..autograd import grad_mode
from ..autograd.api import grad as autograd_grad
from ..autograd.tensor import Tensor
from ..utils._pytree import tree_flatten, tree_unflatten
from . import _nesting

__all__ = ["grad", "grad_and_value", "vjp"]


def gradients(outputs, inputs, seeds, create_graph: bool):
    """d(outputs)/d(inputs) contracted with ``seeds`` (one per output; None = ones for a
    scalar). Outputs that do not require grad contribute nothing; an input the outputs do not
    reach gets zeros. The graph is retained (a vjp function may be called again)."""
    pairs = [(o, s) for o, s in zip(outputs, seeds) if o.requires_grad]
    if not pairs:
        return [ops.zeros_like(x) for x in inputs]
    got = autograd_grad([o for o, _ in pairs], inputs, [s for _, s in pairs], retain_graph=True,
                        create_graph=create_graph, allow_unused=True)
    return [ops.zeros_like(x) if g is None else g for x, g in zip(inputs, got)]


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """``grad_and_value(func)(*args, **kwargs) -> (grad, value)`` (``((grad, (value, aux)))`` with
    ``has_aux``): the gradient of the scalar ``func`` output with respect to ``args[argnums]``
    (the argument's pytree structure; a tuple for a tuple ``argnums``) and the output itself."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        argnums_, diff_args = slice_argnums_checked(args, argnums)
        grad_on = grad_mode.is_grad_enabled()
        with _nesting.differentiating():
            diff_args, leaves = _nesting.make_differentiable(diff_args)
            output = func(*_nesting.replace_argnums(args, argnums_, diff_args), **kwargs)
            output, aux = _nesting.split_aux(output, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                                   "APIs instead?")
            grads = gradients([output], leaves, [None], grad_on and _nesting.reaches_outside([output], leaves))
        grads = tree_unflatten(grads, tree_flatten(diff_args)[1])
        grads, output, aux = finish((grads, output, aux), leaves, grad_on)
        return (grads, (output, aux)) if has_aux else (grads, output)

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """``grad(func)(*args, **kwargs)``: the gradient of the scalar output of ``func`` with
    respect to ``args[argnums]`` (``(grad, aux)`` with ``has_aux``). Nestable:
    ``grad(grad(f))`` differentiates through the inner gradient (higher-order engine)."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = inner(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def slice_argnums_checked(args, argnums):
    if len(args) == 0:
        raise RuntimeError(f"Got argnum={argnums}, but only 0 positional inputs; pass the differentiated "
                           "inputs positionally")
    return _nesting.slice_argnums(args, argnums)


def vjp(func, *primals, has_aux: bool = False):
    """``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with ``has_aux``): ``func(*primals)`` and
    the function ``vjp_fn(cotangents) -> tuple`` of the vector-Jacobian products with respect to
    each primal (one per primal, each with that primal's structure). ``cotangents`` must have
    the output's pytree structure. ``vjp_fn`` may be called several times."""
    primals_in = tuple(primals)
    grad_on = grad_mode.is_grad_enabled()
    with _nesting.differentiating():
        diff_primals, leaves = _nesting.make_differentiable(primals_in)
        output = func(*diff_primals)
        output, aux = _nesting.split_aux(output, has_aux, "vjp(f, *primals)")
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, "vjp(f, *primals)")
    outside = grad_on and _nesting.reaches_outside(flat_out, leaves)
    primals_spec = tree_flatten(diff_primals)[1]

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        # retain_graph is accepted for torch's signature: the graph is always kept, so that
        # vjp_fn can be called again
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        for o, c in zip(flat_out, flat_ct):
            if not isinstance(c, Tensor) or tuple(c.shape) != tuple(o.shape):
                got = tuple(c.shape) if isinstance(c, Tensor) else type(c)
                raise RuntimeError(f"Mismatch in shape: grad_output has shape {got} and output has shape "
                                   f"{tuple(o.shape)}; each cotangent must have its output's shape")
        graph = create_graph
        if graph is None:
            graph = outside or any(c.requires_grad for c in flat_ct)
        with _nesting.differentiating():
            got = gradients(flat_out, leaves, flat_ct, graph)
        return finish(tree_unflatten(got, primals_spec), leaves, graph)

    output, aux = finish((output, aux), leaves, grad_on)
    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def finish(tree, private, grad_on: bool):
    """A transform's results: detached under ``no_grad``, else kept only where they depend on
    outside tensors (``_nesting.release``)."""
    return _nesting.release(tree, private) if grad_on else _nesting.detach_all(tree)


def check_tensor_outputs(flat_out, api: str) -> None:
    if len(flat_out) == 0 or (len(flat_out) == 1 and flat_out[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat_out})")
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
        if not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError(f"{api}: All outputs of f must be floating-point or complex Tensors, got Tensor "
                               f"with dtype {o.dtype}")
