"""``torch.func.jacrev``, ``jacfwd``, ``hessian``, ``jvp`` and ``linearize``: all from
reverse mode.

Algorithm: ``func`` runs once on fresh differentiable inputs (``_nesting``); for every
element ``j`` of every output leaf ``o``, one ``autograd.grad`` call with the one-hot seed
``e_j`` gives row ``j`` of the Jacobian of ``o`` with respect to every input leaf at once;
the rows are stacked and reshaped to ``o.shape + input.shape`` (torch's layout). So the cost
is one backward pass per output element.

* ``jacfwd`` is computed like ``jacrev`` (shardflow has no forward-mode AD): same values and
  shapes as torch, the cost of reverse mode (one backward pass per output element rather than
  one forward pass per input element).
* ``jvp`` and ``linearize`` contract that Jacobian with the tangents
  (``J.reshape(out.numel(), in.numel()) @ t.reshape(-1)``); ``linearize`` computes it once and
  its ``jvp_fn`` only contracts.
* ``hessian(f) = jacfwd(jacrev(f))``: the inner Jacobian is computed with
  ``create_graph=True`` (higher-order engine: the outer transform's inputs are outside the
  inner one, ``_nesting.reaches_outside``), so it needs ops with double backward.
"""

from __future__ import annotations

import functools

from .. import ops
from ..autograd import grad_mode
from ..autograd.tensor import Tensor
from ..utils._pytree import tree_flatten, tree_unflatten
from . import _nesting
from ._grad import check_tensor_outputs, finish, gradients, slice_argnums_checked

__all__ = ["jacrev", "jacfwd", "hessian", "jvp", "linearize"]


def _one_hot(o: Tensor, j: int) -> Tensor:
    seed = ops.zeros(o.numel(), dtype=o.dtype, device=o.device)
    seed[j] = 1
    return seed.reshape(o.shape)


def jacobian_blocks(flat_out, leaves, create_graph: bool):
    """``blocks[k][i]``: the Jacobian of output leaf ``k`` with respect to input leaf ``i``,
    shaped ``out_k.shape + in_i.shape``."""
    blocks = []
    for o in flat_out:
        rows = [gradients([o], leaves, [_one_hot(o, j)], create_graph) for j in range(o.numel())]
        per_input = []
        for i, x in enumerate(leaves):
            shape = tuple(o.shape) + tuple(x.shape)
            if rows:
                per_input.append(ops.stack([r[i] for r in rows]).reshape(shape))
            else:  # an empty output: an empty Jacobian
                per_input.append(ops.zeros(shape, dtype=x.dtype, device=x.device))
        blocks.append(per_input)
    return blocks


def _run(func, args, kwargs, argnums, has_aux: bool, api: str):
    """Run ``func`` on differentiable ``args[argnums]``: (output leaves, output spec, the
    differentiated leaves, their spec, aux)."""
    argnums_, diff_args = slice_argnums_checked(args, argnums)
    diff_args, leaves = _nesting.make_differentiable(diff_args)
    output = func(*_nesting.replace_argnums(args, argnums_, diff_args), **kwargs)
    output, aux = _nesting.split_aux(output, has_aux, api)
    flat_out, out_spec = tree_flatten(output)
    check_tensor_outputs(flat_out, f"{api}(f, *primals)")
    return flat_out, out_spec, leaves, tree_flatten(diff_args)[1], aux


def _jacobian_transform(func, argnums, has_aux: bool, api: str):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grad_on = grad_mode.is_grad_enabled()
        with _nesting.differentiating():
            flat_out, out_spec, leaves, in_spec, aux = _run(func, args, kwargs, argnums, has_aux, api)
            blocks = jacobian_blocks(flat_out, leaves, grad_on and _nesting.reaches_outside(flat_out, leaves))
        result = tree_unflatten([tree_unflatten(b, in_spec) for b in blocks], out_spec)
        result, aux = finish((result, aux), leaves, grad_on)
        return (result, aux) if has_aux else result

    return wrapper


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy: bool = False):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by reverse mode: for an output
    leaf of shape ``O`` and an input leaf of shape ``I``, a tensor of shape ``O + I``; nested as
    the output pytree, each leaf holding the input's structure (a tuple for a tuple ``argnums``).
    ``chunk_size`` is validated and otherwise unused (one backward pass per output element)."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian_transform(func, argnums, has_aux, "jacrev")


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian as ``jacrev`` gives it (torch's values and shapes), computed by reverse
    mode: shardflow has no forward-mode AD. ``randomness`` is checked as vmap checks it."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    return _jacobian_transform(func, argnums, has_aux, "jacfwd")


def hessian(func, argnums=0):
    """``jacfwd(jacrev(func, argnums), argnums)``: the matrix of second derivatives (for an
    input of shape ``I`` and a scalar output, shape ``I + I``). Needs ops with double backward
    (docs/COMPAT.md, 'Higher-order gradients')."""
    return jacfwd(jacrev(func, argnums), argnums)


def _contract(blocks, flat_out, flat_tangents):
    """Per output leaf: sum over inputs of ``J_oi @ t_i``, shaped like the output."""
    result = []
    for o, per_input in zip(flat_out, blocks):
        total = None
        for J, t in zip(per_input, flat_tangents):
            term = J.reshape(o.numel(), t.numel()).matmul(t.reshape(t.numel()).to(J.dtype))
            total = term if total is None else total + term
        result.append(total.reshape(o.shape))
    return result


def _check_tangents(flat_primals, flat_tangents):
    for idx, (p, t) in enumerate(zip(flat_primals, flat_tangents)):
        if tuple(t.shape) != tuple(p.shape):
            raise RuntimeError(f"tangent:{idx} with shape {tuple(t.shape)} in flattened pytree doesn't match the "
                               f"shape {tuple(p.shape)} of the corresponding primal.")
        if t.dtype != p.dtype:
            raise RuntimeError(f"tangent:{idx} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                               f"{p.dtype} of the corresponding primal.")


def _tensor_list(flat, api: str, argname: str) -> None:
    if len(flat) == 0:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for x in flat:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(x)}")


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """``(func(*primals), J @ tangents)`` (with ``aux`` third under ``has_aux``): the
    Jacobian-vector product, computed as the contraction of the reverse-mode Jacobian
    (module docstring). ``strict=True`` raises when an output does not depend on the inputs."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{primals_spec} and tangents with structure {tangents_spec}")
    _tensor_list(flat_primals, api, "primals")
    _tensor_list(flat_tangents, api, "tangents")
    _check_tangents(flat_primals, flat_tangents)
    grad_on = grad_mode.is_grad_enabled()
    with _nesting.differentiating():
        diff_primals, leaves = _nesting.make_differentiable(primals)
        output = func(*diff_primals)
        output, aux = _nesting.split_aux(output, has_aux, api)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, api)
        if strict and any(not o.requires_grad for o in flat_out):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                               "inputs. This is not allowed with strict=True.")
        blocks = jacobian_blocks(flat_out, leaves, grad_on and _nesting.reaches_outside(flat_out, leaves))
        tangents_out = _contract(blocks, flat_out, flat_tangents)
    result = finish((tree_unflatten(flat_out, out_spec), tree_unflatten(tangents_out, out_spec), aux), leaves,
                    grad_on)
    return result if has_aux else result[:2]


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at
    ``primals`` (the Jacobian is computed once here; each call only contracts it)."""
    grad_on = grad_mode.is_grad_enabled()
    with _nesting.differentiating():
        diff_primals, leaves = _nesting.make_differentiable(tuple(primals))
        output = func(*diff_primals)
        flat_out, out_spec = tree_flatten(output)
        check_tensor_outputs(flat_out, "linearize(f, *primals)")
        blocks = jacobian_blocks(flat_out, leaves, grad_on and _nesting.reaches_outside(flat_out, leaves))
    flat_primals, primals_spec = tree_flatten(tuple(primals))
    flat_out, blocks = finish((flat_out, blocks), leaves, grad_on)

    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = tree_flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {tangents_spec} to have the same argspec as the primals "
                               f"{primals_spec}")
        _check_tangents(flat_primals, flat_tangents)
        return tree_unflatten(_contract(blocks, flat_out, flat_tangents), out_spec)

    return tree_unflatten(flat_out, out_spec), jvp_fn
