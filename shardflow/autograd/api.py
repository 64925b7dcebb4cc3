"""Functional entry points of autograd: ``backward`` and ``grad`` (``torch.autograd``'s)."""

from __future__ import annotations

import numpy as np

from .engine import run_backward
from .tensor import Tensor


def _seed_grads(tensors, grad_tensors):
    seeds = []
    for t, g in zip(tensors, grad_tensors):
        if not t.requires_grad:
            raise RuntimeError(
                f"element of shape {tuple(t.shape)} does not require grad and does not have a "
                "grad_fn; did you compute it under no_grad(), or forget requires_grad=True on "
                "the inputs?"
            )
        if g is None:
            if t.array.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs, got a tensor of shape "
                    f"{tuple(t.shape)}; pass gradient=shardflow.ones_like(out) or reduce it "
                    "(out.sum().backward())"
                )
            xp = np if isinstance(t.array, np.ndarray) else None
            seeds.append(xp.ones_like(t.array) if xp else t.array * 0 + 1)
        else:
            ga = g.array if isinstance(g, Tensor) else np.asarray(g, dtype=t.array.dtype)
            if ga.shape != t.array.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output has shape {ga.shape} and output has shape "
                    f"{t.array.shape}; the gradient must have the output's shape"
                )
            seeds.append(ga)
    return seeds


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's ``.grad``."""
    if create_graph:
        raise NotImplementedError(
            "create_graph=True (higher-order gradients) is not supported by shardflow yet"
        )
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if inputs is not None:
        inputs = _as_list(inputs)
        got = grad(tensors, inputs, grads, retain_graph=retain_graph, allow_unused=True)
        for t, g in zip(inputs, got):
            if g is not None:
                # a copy: grad() may give two inputs one array (add's backward), or a
                # read-only broadcast view, and .grad is changed in place later
                t.grad = Tensor(g.array.copy()) if t.grad is None else Tensor(t.grad.array + g.array)
        return
    run_backward(tensors, _seed_grads(tensors, grads), bool(retain_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False, materialize_grads=False):
    """Return d(outputs)/d(inputs) without touching any ``.grad``."""
    if create_graph:
        raise NotImplementedError(
            "create_graph=True (higher-order gradients) is not supported by shardflow yet"
        )
    outputs = _as_list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    capture = {}
    keys = []
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (shape {tuple(t.shape)}) does not require grad")
        key = t if t.grad_fn is None else (t.grad_fn, t._output_nr)
        capture[key] = None
        keys.append(key)
    run_backward(outputs, _seed_grads(outputs, grads), bool(retain_graph), capture=capture)
    result = []
    for t, key in zip(inputs, keys):
        g = capture[key]
        if g is None:
            if materialize_grads:
                g = np.zeros_like(t.array)
            elif not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (shape {tuple(t.shape)}) appears to not "
                    "have been used in the graph; pass allow_unused=True if this is expected"
                )
        result.append(None if g is None else Tensor(g))
    return tuple(result) if not single else tuple(result)
