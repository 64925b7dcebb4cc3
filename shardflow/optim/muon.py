"""Muon (MomentUm Orthogonalized by Newton-schulz), as ``torch.optim.Muon`` (torch 2.13)
computes it, for 2-D parameters.

Per parameter, with gradient ``g`` (an ``(A, B)`` matrix)::

    buf = lerp(buf, g, 1 - momentum)
    u = lerp(g, buf, momentum) if nesterov else buf
    u = NewtonSchulz(u)       in bfloat16, as PyTorch: X = u / max(||u||, eps) (transposed
                              when A > B), then ns_steps times  G = X X^T;
                              X = a X + (b G + c G G) X
    p = p * (1 - lr * weight_decay) - lr * ratio * u
        ratio = sqrt(max(1, A / B)) ('original', default) or 0.2 * sqrt(max(A, B))
        ('match_rms_adamw')

The bfloat16 arithmetic is reproduced on float32 arrays by rounding every intermediate to
bfloat16 (round to nearest even), so the same code runs on NumPy and CuPy arrays.
State: ``momentum_buffer``.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import get_array_module
from .optimizer import Optimizer, _bump

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported "
                             "(expected None, 'original' or 'match_rms_adamw')")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}; optimize the others "
                                     "(biases, norms, embeddings) with AdamW")

    def step(self, closure=None):
        loss = self._closure(closure)
        if any(p.grad is not None and p.array.dtype.kind == "c"
               for group in self.param_groups for p in group["params"]):
            raise RuntimeError("Muon does not support complex parameters")  # before any update
        for group in self.param_groups:
            lr, wd, mom = group["lr"], group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("Muon does not support sparse gradients")
                x, g = p.array, p.grad.array
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = self._zeros_like(p)
                buf = st["momentum_buffer"].array
                buf += (g - buf) * (1 - mom)  # buf.lerp_(g, 1 - momentum)
                update = g + (buf - g) * mom if group["nesterov"] else buf
                update = _newton_schulz(update, group["ns_coefficients"], group["ns_steps"],
                                        group["eps"])
                ratio = _lr_ratio(group["adjust_lr_fn"], x.shape)
                x *= 1 - lr * wd
                x -= (lr * ratio) * update.astype(x.dtype, copy=False)
                _bump(p)
        return loss


def _bf16(a):
    """``a`` (float32) rounded to the nearest bfloat16 value (ties to even), kept float32."""
    a = a.astype(np.float32)
    bits = a.view(np.uint32)
    rounded = (bits + (((bits >> 16) & 1) + np.uint32(0x7FFF))) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


def _newton_schulz(grad, coefficients, steps: int, eps: float):
    """PyTorch's quintic Newton-Schulz iteration towards the orthogonal factor of ``grad``,
    every intermediate rounded to bfloat16."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    xp = get_array_module(grad)
    tall = grad.shape[0] > grad.shape[1]
    x = _bf16(grad)
    if tall:
        x = x.T
    norm = _bf16(xp.sqrt(xp.sum(x * x)))
    x = _bf16(x / xp.maximum(norm, eps))
    for _ in range(steps):
        gram = _bf16(x @ x.T)  # (A, A)
        gram_update = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + gram_update @ x)
    return x.T if tall else x


def _lr_ratio(adjust_lr_fn, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, cols))
    return 1.0
