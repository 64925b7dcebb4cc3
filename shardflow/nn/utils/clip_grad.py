"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_`` (PyTorch's semantics).

``clip_grad_norm_``: total = ``norm_type``-norm of the per-gradient norms (= the norm of all
gradients concatenated); every gradient is multiplied in place by
``min(1, max_norm / (total + 1e-6))``. Returns the total norm as a float32 scalar Tensor.
A complex gradient counts its elements' moduli (torch's ``linalg.vector_norm``), and the total
has the real dtype (float32 for complex64).

``clip_grad_value_``: clamp every element to ``[-clip_value, clip_value]``; a complex
gradient is refused before any gradient changes, with torch's ``NotImplementedError`` (clamp
has no meaning on complex numbers).
"""

from __future__ import annotations

import math

import numpy as np

from ...autograd import Tensor, _wrap
from ...backend import get_array_module


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad.array for p in parameters if p.grad is not None]


def _real_dtype(dtype):
    """The dtype a norm of ``dtype`` has: complex64 -> float32, complex128 -> float64."""
    return dtype.type(0).real.dtype if dtype.kind == "c" else dtype


def _norm(a, p: float):
    """The ``p``-norm of one array (NumPy's or CuPy's: NumPy's functions dispatch to CuPy);
    real for a complex array (the norm of the moduli)."""
    if a.dtype.kind == "c":
        a = np.abs(a)
    if p == math.inf:
        return np.max(np.abs(a)) if a.size else get_array_module(a).zeros((), a.dtype)
    if p == -math.inf:
        return np.min(np.abs(a)) if a.size else get_array_module(a).zeros((), a.dtype)
    flat = a.reshape(-1)
    if p == 2:
        return np.sqrt(np.dot(flat, flat))
    if p == 1:
        return np.sum(np.abs(flat))
    if p == 0:
        return a.dtype.type(np.count_nonzero(flat))
    return np.sum(np.abs(flat) ** p) ** (1.0 / p)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale gradients in place so that their total ``norm_type``-norm is at most ``max_norm``."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return _wrap(np.zeros((), dtype=np.float32))
    if _has_global_grads(parameters):
        total = _global_total_norm(parameters, norm_type)
    else:
        # .astype: a NumPy scalar or a 0-d device array, kept where the gradients are
        norms = np.stack([_norm(g, norm_type).astype(_real_dtype(g.dtype)) for g in grads])
        total = _norm(norms, norm_type).astype(norms.dtype)
        total = np.asarray(total) if isinstance(total, np.generic) else total
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    coef = float(max_norm) / (float(total) + 1e-6)
    if coef < 1.0 or not np.isfinite(total):
        for g in grads:
            g *= g.dtype.type(min(coef, 1.0) if np.isfinite(coef) else coef)
    return _wrap(total)


def _has_global_grads(parameters) -> bool:
    ps = [parameters] if isinstance(parameters, Tensor) else parameters
    return any(p.grad is not None and p.grad._spec is not None for p in ps)


def _global_total_norm(parameters, p: float) -> np.ndarray:
    """The norm over global gradients: each shard's contribution goes through the sbp rules
    (a split gradient's local sum is Partial), so ``.item()`` all-reduces exactly once."""
    ps = [parameters] if isinstance(parameters, Tensor) else parameters
    total = None
    for q in ps:
        if q.grad is None:
            continue
        g = q.grad.abs()
        part = g.amax() if math.isinf(p) else (g**p).sum() if p != 2 else (g * g).sum()
        if total is None:
            total = part
        else:
            total = total.maximum(part) if math.isinf(p) else total + part
    value = float(total.item())
    if not math.isinf(p):
        value = value ** (1.0 / p)
    return np.asarray(value, dtype=np.float32)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    v = float(clip_value)
    grads = _grads(parameters)
    if any(g.dtype.kind == "c" for g in grads):
        # torch's words (its clamp kernel); checked first so no gradient is half clipped
        raise NotImplementedError("clamp is not supported for complex types")
    for g in grads:
        np.clip(g, -v, v, out=g)


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
