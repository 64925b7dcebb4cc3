"""Gradient clipping in two parts, as torch 2.13 splits ``clip_grad_norm_``:
``get_total_norm`` (the ``norm_type``-norm of the per-tensor norms, = the norm of all
tensors concatenated) and ``clip_grads_with_norm_`` (multiply every gradient by
``min(1, max_norm / (total_norm + 1e-6))``); ``clip_grad_norm`` is the deprecated alias of
``clip_grad_norm_``."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...autograd import Tensor, _wrap
from .clip_grad import _norm, _real_dtype, clip_grad_norm_


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type``-norm of ``tensors`` (usually ``[p.grad for p in params]``) as one
    vector; a scalar Tensor of the first tensor's dtype, real for complex tensors (their
    moduli count, as in ``linalg.vector_norm``; ``tensor(0.)`` when empty). Global
    tensors count their whole logical value (one all-reduce, through the sbp rules)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _wrap(np.zeros((), dtype=np.float32))
    if any(t._spec is not None for t in tensors):
        total = np.asarray(_global_norm(tensors, norm_type),
                           dtype=_real_dtype(tensors[0].array.dtype))
    else:
        norms = np.stack([np.asarray(_norm(t.array, norm_type)).astype(_real_dtype(t.array.dtype))
                          for t in tensors])
        total = np.asarray(_norm(norms, norm_type)).astype(norms.dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`")
    return _wrap(total)


def _global_norm(tensors, p: float) -> float:
    total = None
    for t in tensors:
        a = t.detach().abs()
        part = a.amax() if math.isinf(p) else (a * a).sum() if p == 2 else (a**p).sum()
        total = part if total is None else (total.maximum(part) if math.isinf(p) else total + part)
    value = float(total.item())
    return value if math.isinf(p) else value ** (1.0 / p)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of ``parameters`` in place by ``min(1, max_norm / (total_norm +
    1e-6))`` (``total_norm``: a Tensor or number, e.g. from :func:`get_total_norm`)."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad.array for p in parameters if p.grad is not None]
    if not grads:
        return
    total = float(total_norm.item() if isinstance(total_norm, Tensor) else total_norm)
    coef = min(float(max_norm) / (total + 1e-6), 1.0)
    for g in grads:
        g *= g.dtype.type(coef)


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated in PyTorch in favour of ``clip_grad_norm_`` (same result, FutureWarning)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


__all__ = ["get_total_norm", "clip_grads_with_norm_", "clip_grad_norm"]
