"""Finite-difference gradient checks (float64), like ``torch.autograd.gradcheck``.

``gradcheck(fn, inputs)`` compares, for each input that requires grad, the analytic
vector-Jacobian product ``d(sum(fn(x) * v))/dx`` for a random ``v`` against central
differences ``(f(x + eps e_i) - f(x - eps e_i)) / 2 eps`` element by element.

It never passes vacuously: with no input requiring grad, or no floating-point output, it
raises ``ValueError``; an output that does not require grad counts as an analytic gradient
of zero, which the finite differences then confirm or refute (as PyTorch's does).

``elements=k`` checks only k elements of each input (the first, the last and a seeded
random choice between them): each element costs two evaluations of ``fn``, so this is how
an input spanning several kernel blocks gets a finite-difference check at a bounded cost.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, no_grad


def _outputs(out):
    outs = out if isinstance(out, tuple | list) else (out,)
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _checked_indices(size: int, elements: int | None, rng: np.random.Generator) -> np.ndarray:
    if elements is None or size <= elements:
        return np.arange(size)
    middle = rng.choice(np.arange(1, size - 1), size=max(0, elements - 2), replace=False)
    return np.unique(np.concatenate([[0, size - 1], middle]))


def gradcheck(fn, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, seed: int = 0,
              raise_exception: bool = True, elements: int | None = None) -> bool:
    rng = np.random.default_rng(seed)
    inputs = list(inputs)
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not diff_inputs:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them "
            "has requires_grad=True; pass the inputs to check as tensor(..., requires_grad=True)"
        )
    for t in diff_inputs:
        if t.array.dtype != np.float64:
            raise TypeError(f"gradcheck needs float64 inputs, got {t.dtype}; convert with .double()")
    outs = _outputs(fn(*inputs))
    if not outs:
        raise ValueError(
            "gradcheck: the function returned no floating-point tensor, so there is no gradient "
            "to check; return the differentiable result(s) of the op"
        )
    vs = [rng.standard_normal(o.array.shape) for o in outs]

    def scalar(*args):
        with no_grad():
            o = _outputs(fn(*args))
        return sum(float(np.sum(oi.array.astype(np.float64) * v)) for oi, v in zip(o, vs))

    # analytic: one backward of sum(out * v); outputs without a graph contribute nothing
    for t in diff_inputs:
        t.grad = None
    terms = [(o * Tensor(v)).sum() for o, v in zip(outs, vs) if o.requires_grad]
    if terms:
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        total.backward()
    for k, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            continue
        analytic = np.zeros(t.array.shape) if t.grad is None else t.grad.array
        flat = t.array.reshape(-1)
        if not t.array.flags.c_contiguous:  # reshape would copy: perturbing it would change nothing
            raise ValueError(f"gradcheck needs contiguous inputs; input {k} is not (use .contiguous())")
        idx = _checked_indices(flat.size, elements, rng)
        numeric = np.zeros(idx.size)
        for j, i in enumerate(idx):
            orig = flat[i]
            flat[i] = orig + eps
            fp = scalar(*inputs)
            flat[i] = orig - eps
            fm = scalar(*inputs)
            flat[i] = orig
            numeric[j] = (fp - fm) / (2 * eps)
        got = analytic.reshape(-1)[idx]
        if not np.allclose(got, numeric, atol=atol, rtol=rtol):
            if raise_exception:
                err = np.max(np.abs(got - numeric))
                where = "" if idx.size == flat.size else f" (checked flat elements {idx.tolist()})"
                raise AssertionError(
                    f"gradcheck failed for input {k} of shape {t.array.shape}{where}: max abs error "
                    f"{err:.3g}\nanalytic:\n{got.reshape(analytic.shape) if idx.size == flat.size else got}"
                    f"\nnumeric:\n{numeric.reshape(analytic.shape) if idx.size == flat.size else numeric}"
                )
            return False
    return True
