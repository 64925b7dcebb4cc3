"""Finite-difference gradient checks (float64), like ``torch.autograd.gradcheck``.

``gradcheck(fn, inputs)`` compares, for each input that requires grad, the analytic
vector-Jacobian product ``d(sum(fn(x) * v))/dx`` for a random ``v`` against central
differences ``(f(x + eps e_i) - f(x - eps e_i)) / 2 eps`` element by element.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, no_grad


def _outputs(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, seed: int = 0,
              raise_exception: bool = True) -> bool:
    rng = np.random.default_rng(seed)
    inputs = list(inputs)
    for t in inputs:
        if isinstance(t, Tensor) and t.requires_grad and t.array.dtype != np.float64:
            raise TypeError(f"gradcheck needs float64 inputs, got {t.dtype}")
    outs = _outputs(fn(*inputs))
    vs = [rng.standard_normal(o.array.shape) for o in outs]

    def scalar(*args):
        with no_grad():
            o = _outputs(fn(*args))
        return sum(float(np.sum(oi.array.astype(np.float64) * v)) for oi, v in zip(o, vs))

    # analytic
    for t in inputs:
        if isinstance(t, Tensor):
            t.grad = None
    total = None
    for o, v in zip(outs, vs):
        term = (o * Tensor(v)).sum()
        total = term if total is None else total + term
    if total is None or not total.requires_grad:
        return True
    total.backward()
    for k, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            continue
        analytic = np.zeros(t.array.shape) if t.grad is None else t.grad.array
        numeric = np.zeros(t.array.shape)
        flat = t.array.reshape(-1)
        nflat = numeric.reshape(-1)
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps
            fp = scalar(*inputs)
            flat[i] = orig - eps
            fm = scalar(*inputs)
            flat[i] = orig
            nflat[i] = (fp - fm) / (2 * eps)
        if not np.allclose(analytic, numeric, atol=atol, rtol=rtol):
            if raise_exception:
                err = np.max(np.abs(analytic - numeric))
                raise AssertionError(
                    f"gradcheck failed for input {k} of shape {t.array.shape}: max abs error {err:.3g}\n"
                    f"analytic:\n{analytic}\nnumeric:\n{numeric}"
                )
            return False
    return True
