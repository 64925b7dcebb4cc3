"""``torch.autograd.functional``: ``vjp``, ``jacobian``, ``jvp``, ``hvp``, ``vhp``, ``hessian``
with torch's signatures, argument checks and result structure (a tensor for a tensor, tuples
for tuples: ``jacobian(f, (x, y))[i][j]`` is d out_i / d in_j of shape ``out_i.shape +
in_j.shape``).

Algorithms. Each call works on detached copies of ``inputs`` that require grad, so the
caller's graph is untouched and results carry no graph.

* ``vjp``: one reverse pass, ``grad(outputs, inputs, v)``.
* ``jacobian``: reverse mode, one pass per output element (the rows); ``vectorize`` and
  ``strategy`` are accepted and do not change the result (torch batches the rows with vmap,
  which shardflow has not).
* ``jvp``: ``J v`` from the Jacobian rows (torch uses the double-vjp trick, a backward
  through a backward; the rows are exact and need no second derivative of any op).
* ``hessian``, ``hvp``, ``vhp``: exact, by double backward (higher_order.py): the gradient
  ``g`` is computed with ``create_graph=True``, then ``hvp`` is ``grad(g, x, v)`` and
  ``hessian`` one such pass per element of ``g`` (one-hot ``v``). ``vhp`` is ``v^T H``, the
  same vector for the symmetric Hessian of a twice continuously differentiable function.
  Fallback, when an op on the path has no second derivative (``DoubleBackwardNotImplemented``)
  and ``create_graph`` is False: the derivative of the exact (reverse-mode) gradient by
  central differences in float64 with one Richardson step: ``D(h) = (g(x + h u) - g(x - h
  u)) / 2h``, ``H u ~ (4 D(h/2) - D(h)) / 3``, ``h = 2^-11 max(1, |x|_inf)``; the error is
  ``O(h^4)`` times the function's fifth derivative plus the rounding ``eps |g| / h``: about
  1e-11 for smooth float64 functions of moderate scale.
* ``create_graph=True``: as in torch, an input that requires grad stays linked to the
  caller's graph (a view of it is differentiated) and the results carry the graph, so they
  can be differentiated again; the others become fresh leaves. ``strict=True`` raises
  torch's error when an output does not depend on an input.
"""

from __future__ import annotations

import numpy as np

from ..backend import get_array_module
from .api import grad as _grad
from .dispatch import OPS
from .grad_mode import enable_grad
from .higher_order import DoubleBackwardNotImplemented
from .tensor import Tensor, _wrap

__all__ = ["vjp", "jacobian", "jvp", "hessian", "hvp", "vhp"]


# ----------------------------------------------------------------------------- structure
def _as_tuple(x, arg: str, fn: str):
    """(tuple of tensors, was it a tensor)."""
    if isinstance(x, Tensor):
        return (x,), True
    if isinstance(x, tuple | list) and all(isinstance(t, Tensor) for t in x):
        return tuple(x), False
    items = list(x) if isinstance(x, tuple | list) else [x]
    k = next(i for i, t in enumerate(items) if not isinstance(t, Tensor))
    raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors but the value "
                    f"at index {k} has type {type(items[k]).__name__}.")


def _prepare(inputs, fn: str, create_graph: bool = False):
    """The tensors to differentiate: detached copies that require grad (the caller's tensors
    and graph are not touched); with ``create_graph``, an input that requires grad is a view
    of the caller's tensor instead, so the results stay differentiable with respect to it."""
    tup, single = _as_tuple(inputs, "inputs", fn)
    if create_graph:
        return tuple(t.view_as(t) if t.requires_grad else _wrap(t.array.copy(), requires_grad=True)
                     for t in tup), single
    return tuple(_wrap(t.array.copy(), requires_grad=True) for t in tup), single


def _call(func, inputs, fn: str):
    with enable_grad():
        out = func(*inputs)
    tup, single = _as_tuple(out, "outputs of the user-provided function", fn)
    return tup, single


def _detached(outs, create_graph: bool = False):
    return tuple(outs) if create_graph else tuple(_wrap(o.array) for o in outs)


def _stack(rows, shape, create_graph: bool, like):
    """One Tensor of ``shape`` from the gradient rows (Tensors), with their graph when
    ``create_graph``."""
    if not rows:
        return _wrap(get_array_module(like.array).zeros(shape, dtype=like.array.dtype))
    if create_graph:
        return OPS["stack"](list(rows)).reshape(shape)
    return _wrap(get_array_module(rows[0].array).stack([r.array for r in rows]).reshape(shape))


def _check_v(v, like, fn: str, what: str):
    tup, _ = _as_tuple(v, "v", fn)
    if len(tup) != len(like):
        raise RuntimeError(f"{fn}: v is a tuple of invalid length: should be {len(like)} but got {len(tup)}.")
    for i, (a, b) in enumerate(zip(tup, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"{fn}: Entry {i} in v has invalid size: should be {tuple(b.shape)} but got "
                               f"{tuple(a.shape)} (v must have the shape of the function's {what}).")
    return tup


def _strict_error(fn, i, j):
    return RuntimeError(
        f"Output {i} of the user-provided function is independent of input {j}. This is not allowed "
        f"in strict mode ({fn}); pass strict=False to get zeros there"
    )


def _grads(out: Tensor, inputs, seed, strict: bool, fn: str, i: int, create_graph: bool = False):
    """d <out, seed> / d inputs (zeros where independent, or torch's strict error): arrays,
    or Tensors carrying the graph with ``create_graph`` (``seed`` may be a Tensor then)."""
    if not out.requires_grad:
        if strict:
            raise _strict_error(fn, i, 0)
        zeros = [get_array_module(t.array).zeros_like(t.array) for t in inputs]
        return [_wrap(z) for z in zeros] if create_graph else zeros
    seed = seed if isinstance(seed, Tensor) else _wrap(seed)
    gs = _grad([out], list(inputs), [seed], retain_graph=True, create_graph=create_graph,
               allow_unused=True)
    res = []
    for j, (g, t) in enumerate(zip(gs, inputs)):
        if g is None:
            if strict:
                raise _strict_error(fn, i, j)
            zero = get_array_module(t.array).zeros_like(t.array)
            res.append(_wrap(zero) if create_graph else zero)
        else:
            res.append(g if create_graph else g.array)
    return res


def _rows(out: Tensor, inputs, strict: bool, fn: str, i: int, create_graph: bool = False):
    """The Jacobian of ``out`` as one array (a Tensor with ``create_graph``) per input, shape
    ``out.shape + input.shape``."""
    xp = get_array_module(out.array)
    n = out.array.size
    per_input = [[] for _ in inputs]
    for k in range(n):
        seed = xp.zeros(n, dtype=out.array.dtype)
        seed[k] = 1
        grads = _grads(out, inputs, seed.reshape(out.array.shape), strict, fn, i, create_graph)
        for j, g in enumerate(grads):
            per_input[j].append(g)
    result = []
    for t, rows in zip(inputs, per_input):
        shape = tuple(out.shape) + tuple(t.shape)
        if create_graph:
            result.append(_stack(rows, shape, True, t))
        else:
            stacked = xp.stack(rows) if rows else xp.zeros((0,) + t.array.shape, dtype=t.array.dtype)
            result.append(stacked.reshape(shape))
    return result


# ----------------------------------------------------------------------------- first order
def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.vjp``: ``(func(inputs), v^T J)``."""
    inputs, in_single = _prepare(inputs, "vjp", create_graph)
    outs, out_single = _call(func, inputs, "vjp")
    if v is None:
        if len(outs) != 1 or outs[0].array.size != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        seeds = [get_array_module(outs[0].array).ones_like(outs[0].array)]
    else:
        vs = _check_v(v, outs, "vjp", "output")
        seeds = list(vs) if create_graph else [t.array for t in vs]
    total = None
    for i, (o, s) in enumerate(zip(outs, seeds)):
        g = _grads(o, inputs, s, strict, "vjp", i, create_graph)
        total = g if total is None else [a + b for a, b in zip(total, g)]
    res = tuple(total) if create_graph else tuple(_wrap(g) for g in total)
    out = _detached(outs, create_graph)
    return (out[0] if out_single else out), (res[0] if in_single else res)


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """``torch.autograd.functional.jacobian`` (reverse mode, one pass per output element)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` is only "
                                  "implemented together with `vectorize=True`.")
    inputs, in_single = _prepare(inputs, "jacobian", create_graph)
    outs, out_single = _call(func, inputs, "jacobian")
    blocks = []
    for i, o in enumerate(outs):
        rows = _rows(o, inputs, strict, "jacobian", i, create_graph)
        rows = tuple(rows) if create_graph else tuple(_wrap(a) for a in rows)
        blocks.append(rows[0] if in_single else rows)
    return blocks[0] if out_single else tuple(blocks)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.jvp``: ``(func(inputs), J v)`` (from the Jacobian rows:
    see the module docstring)."""
    inputs, in_single = _prepare(inputs, "jvp", create_graph)
    if v is None:
        if len(inputs) != 1 or inputs[0].array.size != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        vs = [_wrap(get_array_module(inputs[0].array).ones_like(inputs[0].array))]
    else:
        vs = list(_check_v(v, inputs, "jvp", "input"))
    outs, out_single = _call(func, inputs, "jvp")
    res = []
    for i, o in enumerate(outs):
        if create_graph:
            acc = None
            for jac, vec in zip(_rows(o, inputs, strict, "jvp", i, True), vs):
                term = (jac.reshape(o.array.size, -1) @ vec.reshape(-1).to(jac.dtype)).reshape(tuple(o.shape))
                acc = term if acc is None else acc + term
            res.append(acc if acc is not None else _wrap(o.array * 0))
            continue
        xp = get_array_module(o.array)
        acc = xp.zeros(o.array.shape, dtype=o.array.dtype)
        for jac, vec in zip(_rows(o, inputs, strict, "jvp", i), vs):
            flat = jac.reshape(o.array.size, -1)
            acc = acc + (flat @ vec.array.reshape(-1).astype(flat.dtype)).reshape(o.array.shape)
        res.append(_wrap(acc))
    out = _detached(outs, create_graph)
    return (out[0] if out_single else out), (res[0] if out_single else tuple(res))


# ----------------------------------------------------------------------------- second order
def _scalar_func_grad(func, fn: str, strict: bool):
    """x -> (f(x) detached, exact gradient arrays), for a function returning one element."""

    def gradient(arrays):
        xs = tuple(_wrap(a, requires_grad=True) for a in arrays)
        outs, _ = _call(func, xs, fn)
        if len(outs) != 1 or outs[0].array.size != 1:
            raise RuntimeError(f"The function given to {fn} should return a single Tensor containing a single "
                               f"element, got {len(outs)} output(s) of shape "
                               f"{tuple(outs[0].shape) if outs else ()}")
        o = outs[0]
        seed = get_array_module(o.array).ones_like(o.array)
        return o, _grads(o, xs, seed, strict, fn, 0)

    return gradient


def _step(arrays) -> float:
    scale = max([1.0] + [float(abs(a).max()) for a in arrays if a.size])
    return 2.0 ** -11 * scale


def _directional(gradient, arrays, direction):
    """``H u`` for the direction ``u`` (one array per input), by Richardson-extrapolated
    central differences of the exact gradient (module docstring)."""
    h = _step(arrays)

    def diff(step):
        plus = gradient([a + step * u for a, u in zip(arrays, direction)])[1]
        minus = gradient([a - step * u for a, u in zip(arrays, direction)])[1]
        return [(p - m) / (2 * step) for p, m in zip(plus, minus)]

    coarse, fine = diff(h), diff(h / 2)
    return [(4 * f - c) / 3 for f, c in zip(fine, coarse)]


def _float64(inputs):
    return [t.array.astype(np.float64) for t in inputs]


def _scalar_output(func, inputs, fn: str) -> Tensor:
    outs, _ = _call(func, inputs, fn)
    if len(outs) != 1 or outs[0].array.size != 1:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor containing a single "
                           f"element, got {len(outs)} output(s) of shape "
                           f"{tuple(outs[0].shape) if outs else ()}")
    return outs[0]


def _exact_first(func, inputs, strict: bool, fn: str):
    """(output, its gradient Tensors with their graph): the first half of a double backward."""
    out = _scalar_output(func, inputs, fn)
    seed = get_array_module(out.array).ones_like(out.array)
    return out, _grads(out, inputs, seed, strict, fn, 0, create_graph=True)


def _second(gs, seeds, inputs, create_graph: bool, strict: bool, fn: str):
    """d <gs, seeds> / d inputs (Tensors): the second half of a double backward."""
    pairs = [(g, s) for g, s in zip(gs, seeds) if g.requires_grad]
    if pairs:
        got = _grad([g for g, _ in pairs], list(inputs), [s for _, s in pairs], retain_graph=True,
                    create_graph=create_graph, allow_unused=True)
    else:
        got = [None] * len(inputs)
    res = []
    for j, (h, t) in enumerate(zip(got, inputs)):
        if h is None:
            if strict:
                raise RuntimeError(f"The hessian of the user-provided function is independent of input {j}. "
                                   f"This is not allowed in strict mode ({fn}); pass strict=False to get zeros")
            h = _wrap(get_array_module(t.array).zeros_like(t.array))
        res.append(h)
    return res


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """``torch.autograd.functional.hessian`` of a function returning one element: a tensor of
    shape ``x.shape + x.shape`` for one input, ``H[i][j]`` blocks for a tuple (algorithm in the
    module docstring: exact by double backward, else finite differences)."""
    inputs, in_single = _prepare(inputs, "hessian", create_graph)
    try:
        blocks = _hessian_exact(func, inputs, create_graph, strict)
    except DoubleBackwardNotImplemented:
        if create_graph:
            raise
        blocks = _hessian_differences(func, inputs, strict)
    return blocks[0][0] if in_single else tuple(blocks)


def _hessian_exact(func, inputs, create_graph: bool, strict: bool):
    _, gs = _exact_first(func, inputs, strict, "hessian")
    blocks = []
    for i, (g, ti) in enumerate(zip(gs, inputs)):
        xp = get_array_module(g.array)
        per_j = [[] for _ in inputs]
        for k in range(g.array.size):
            onehot = xp.zeros(g.array.size, dtype=g.array.dtype)
            onehot[k] = 1
            seeds = [_wrap(xp.zeros_like(h.array)) for h in gs]
            seeds[i] = _wrap(onehot.reshape(g.array.shape))
            for j, row in enumerate(_second(gs, seeds, inputs, create_graph, strict, "hessian")):
                per_j[j].append(row)
        blocks.append(tuple(_stack(per_j[j], tuple(ti.shape) + tuple(tj.shape), create_graph, ti)
                            for j, tj in enumerate(inputs)))
    return blocks


def _hessian_differences(func, inputs, strict: bool):
    """The Hessian by differences of the exact gradient (the fallback: module docstring)."""
    gradient = _scalar_func_grad(func, "hessian", strict)
    gradient(tuple(t.array for t in inputs))  # validates the function's output (and strictness)
    arrays = _float64(inputs)
    xp = get_array_module(arrays[0])
    cols = [[[] for _ in inputs] for _ in inputs]  # cols[i][j]: d g_i / d x_j, one column per element of x_j
    for j, a in enumerate(arrays):
        for k in range(a.size):
            direction = [xp.zeros_like(b) for b in arrays]
            direction[j].reshape(-1)[k] = 1
            for i, col in enumerate(_directional(gradient, arrays, direction)):
                cols[i][j].append(col)
    blocks = []
    for i, ti in enumerate(inputs):
        row = []
        for j, tj in enumerate(inputs):
            stacked = xp.stack(cols[i][j], axis=-1) if cols[i][j] else xp.zeros(ti.array.shape + (0,))
            row.append(_wrap(stacked.reshape(tuple(ti.shape) + tuple(tj.shape)).astype(ti.array.dtype)))
        blocks.append(tuple(row))
    return blocks


def _second_order_product(func, inputs, v, create_graph, strict, fn):
    inputs, in_single = _prepare(inputs, fn, create_graph)
    if v is None:
        if len(inputs) != 1 or inputs[0].array.size != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        vs = [_wrap(get_array_module(inputs[0].array).ones_like(inputs[0].array))]
    else:
        vs = list(_check_v(v, inputs, fn, "input"))
    try:
        out, gs = _exact_first(func, inputs, strict, fn)
        res = tuple(_second(gs, vs, inputs, create_graph, strict, fn))
        out = out if create_graph else _wrap(out.array)
    except DoubleBackwardNotImplemented:
        if create_graph:
            raise
        gradient = _scalar_func_grad(func, fn, strict)
        out, _ = gradient(tuple(t.array for t in inputs))
        prod = _directional(gradient, _float64(inputs), [t.array.astype(np.float64) for t in vs])
        res = tuple(_wrap(p.astype(t.array.dtype)) for p, t in zip(prod, inputs))
        out = _wrap(out.array)
    return out, (res[0] if in_single else res)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.hvp``: ``(func(inputs), H v)``."""
    return _second_order_product(func, inputs, v, create_graph, strict, "hvp")


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.vhp``: ``(func(inputs), v^T H)`` (``H v`` for the symmetric
    Hessian: module docstring)."""
    return _second_order_product(func, inputs, v, create_graph, strict, "vhp")
