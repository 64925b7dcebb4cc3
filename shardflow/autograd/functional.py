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
* ``jvp``: ``J v`` from the Jacobian rows. torch computes it with the double-vjp trick, a
  backward through a backward, which needs ``create_graph`` — shardflow's engine has no
  higher-order gradients, so the rows are formed instead (exact; one pass per output
  element).
* ``hessian``, ``hvp``, ``vhp``: with no backward through a backward, the second derivative
  is the derivative of the exact (reverse-mode) gradient, taken by central differences in
  float64 with one Richardson step: ``D(h) = (g(x + h u) - g(x - h u)) / 2h``,
  ``H u ~ (4 D(h/2) - D(h)) / 3``, ``h = 2^-11 max(1, |x|_inf)``; the error is
  ``O(h^4)`` times the function's fifth derivative plus the rounding ``eps |g| / h``: about
  1e-11 for smooth float64 functions of moderate scale (measured against torch; the tests
  compare at 1e-8). ``hvp``
  is ``H v`` (one direction: four gradients), ``vhp`` is ``v^T H``, the same vector for the
  symmetric Hessian of a twice continuously differentiable function (torch's docs say so
  too); ``hessian`` takes one direction per input element. A function that calls float32
  ops internally gets float32-accurate results (about 1e-4 relative).
* ``create_graph=True`` raises (no higher-order gradients, as ``autograd.grad``);
  ``strict=True`` raises torch's error when an output does not depend on an input.
"""

from __future__ import annotations

import numpy as np

from ..backend import get_array_module
from .api import grad as _grad
from .grad_mode import enable_grad
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


def _no_graph(create_graph: bool, fn: str) -> None:
    if create_graph:
        raise NotImplementedError(
            f"{fn}(create_graph=True) needs higher-order gradients (a backward through a backward), "
            "which shardflow's autograd does not support yet; call it with create_graph=False"
        )


def _prepare(inputs, fn: str):
    """Detached copies that require grad (the caller's tensors and graph are not touched)."""
    tup, single = _as_tuple(inputs, "inputs", fn)
    return tuple(_wrap(t.array.copy(), requires_grad=True) for t in tup), single


def _call(func, inputs, fn: str):
    with enable_grad():
        out = func(*inputs)
    tup, single = _as_tuple(out, "outputs of the user-provided function", fn)
    return tup, single


def _detached(outs):
    return tuple(_wrap(o.array) for o in outs)


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


def _grads(out: Tensor, inputs, seed, strict: bool, fn: str, i: int):
    """d <out, seed> / d inputs as arrays (zeros where independent, or torch's strict error)."""
    if not out.requires_grad:
        if strict:
            raise _strict_error(fn, i, 0)
        return [get_array_module(t.array).zeros_like(t.array) for t in inputs]
    gs = _grad([out], list(inputs), [_wrap(seed)], retain_graph=True, allow_unused=True)
    res = []
    for j, (g, t) in enumerate(zip(gs, inputs)):
        if g is None:
            if strict:
                raise _strict_error(fn, i, j)
            res.append(get_array_module(t.array).zeros_like(t.array))
        else:
            res.append(g.array)
    return res


def _rows(out: Tensor, inputs, strict: bool, fn: str, i: int):
    """The Jacobian of ``out`` as one array per input, shape ``out.shape + input.shape``."""
    xp = get_array_module(out.array)
    n = out.array.size
    per_input = [[] for _ in inputs]
    for k in range(n):
        seed = xp.zeros(n, dtype=out.array.dtype)
        seed[k] = 1
        for j, g in enumerate(_grads(out, inputs, seed.reshape(out.array.shape), strict, fn, i)):
            per_input[j].append(g)
    result = []
    for t, rows in zip(inputs, per_input):
        stacked = xp.stack(rows) if rows else xp.zeros((0,) + t.array.shape, dtype=t.array.dtype)
        result.append(stacked.reshape(tuple(out.shape) + tuple(t.shape)))
    return result


# ----------------------------------------------------------------------------- first order
def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.vjp``: ``(func(inputs), v^T J)``."""
    _no_graph(create_graph, "vjp")
    inputs, in_single = _prepare(inputs, "vjp")
    outs, out_single = _call(func, inputs, "vjp")
    if v is None:
        if len(outs) != 1 or outs[0].array.size != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        seeds = [get_array_module(outs[0].array).ones_like(outs[0].array)]
    else:
        seeds = [t.array for t in _check_v(v, outs, "vjp", "output")]
    total = None
    for i, (o, s) in enumerate(zip(outs, seeds)):
        g = _grads(o, inputs, s, strict, "vjp", i)
        total = g if total is None else [a + b for a, b in zip(total, g)]
    res = tuple(_wrap(g) for g in total)
    out = _detached(outs)
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
    _no_graph(create_graph, "jacobian")
    inputs, in_single = _prepare(inputs, "jacobian")
    outs, out_single = _call(func, inputs, "jacobian")
    blocks = []
    for i, o in enumerate(outs):
        rows = tuple(_wrap(a) for a in _rows(o, inputs, strict, "jacobian", i))
        blocks.append(rows[0] if in_single else rows)
    return blocks[0] if out_single else tuple(blocks)


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.jvp``: ``(func(inputs), J v)`` (from the Jacobian rows:
    see the module docstring)."""
    _no_graph(create_graph, "jvp")
    inputs, in_single = _prepare(inputs, "jvp")
    if v is None:
        if len(inputs) != 1 or inputs[0].array.size != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        vs = [get_array_module(inputs[0].array).ones_like(inputs[0].array)]
    else:
        vs = [t.array for t in _check_v(v, inputs, "jvp", "input")]
    outs, out_single = _call(func, inputs, "jvp")
    res = []
    for i, o in enumerate(outs):
        xp = get_array_module(o.array)
        acc = xp.zeros(o.array.shape, dtype=o.array.dtype)
        for jac, vec in zip(_rows(o, inputs, strict, "jvp", i), vs):
            flat = jac.reshape(o.array.size, -1)
            acc = acc + (flat @ vec.reshape(-1).astype(flat.dtype)).reshape(o.array.shape)
        res.append(_wrap(acc))
    out = _detached(outs)
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


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """``torch.autograd.functional.hessian`` of a function returning one element: a tensor of
    shape ``x.shape + x.shape`` for one input, ``H[i][j]`` blocks for a tuple (algorithm in the
    module docstring)."""
    _no_graph(create_graph, "hessian")
    inputs, in_single = _prepare(inputs, "hessian")
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
    return blocks[0][0] if in_single else tuple(blocks)


def _second_order_product(func, inputs, v, create_graph, strict, fn):
    _no_graph(create_graph, fn)
    inputs, in_single = _prepare(inputs, fn)
    if v is None:
        if len(inputs) != 1 or inputs[0].array.size != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        vs = [get_array_module(inputs[0].array).ones_like(inputs[0].array)]
    else:
        vs = [t.array for t in _check_v(v, inputs, fn, "input")]
    gradient = _scalar_func_grad(func, fn, strict)
    out, _ = gradient(tuple(t.array for t in inputs))
    prod = _directional(gradient, _float64(inputs), [a.astype(np.float64) for a in vs])
    res = tuple(_wrap(p.astype(t.array.dtype)) for p, t in zip(prod, inputs))
    return _wrap(out.array), (res[0] if in_single else res)


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.hvp``: ``(func(inputs), H v)``."""
    return _second_order_product(func, inputs, v, create_graph, strict, "hvp")


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """``torch.autograd.functional.vhp``: ``(func(inputs), v^T H)`` (``H v`` for the symmetric
    Hessian: module docstring)."""
    return _second_order_product(func, inputs, v, create_graph, strict, "vhp")
