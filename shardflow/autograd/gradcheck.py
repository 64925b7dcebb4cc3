"""``torch.autograd.gradcheck`` / ``gradgradcheck`` (torch's signatures and messages).

``gradcheck(func, inputs)``: for every floating-point output ``o_j`` and every input ``x_i``
that requires grad, the numerical Jacobian (central differences ``(f(x + eps e_k) -
f(x - eps e_k)) / 2 eps``, one input element at a time, in float64 arithmetic on the input's
own array) is compared with the analytical one (row ``m`` of ``d o_j / d x_i`` from
``autograd.grad(o_j, x_i, one_hot_m)``) elementwise with ``|a - n| <= atol + rtol * |n|``.
A mismatch raises ``GradcheckError`` (a ``RuntimeError``) naming the output and the input
with both Jacobians, or returns False with ``raise_exception=False``. Non-float64 inputs
that require grad warn, as torch's do (float32 differences are too coarse for the default
tolerances).

``gradgradcheck(func, inputs, grad_outputs=None)``: ``gradcheck`` of the first-derivative
map ``(inputs, v) -> autograd.grad(func(inputs), inputs, v, create_graph=True)``, with
random float64 ``v`` (seeded) when ``grad_outputs`` is not given: the second derivatives.

``check_forward_ad=True`` also checks forward mode: column ``k`` of the forward Jacobian of
``o_j`` with respect to ``x_i`` is the tangent of ``o_j`` (``forward_ad.unpack_dual``) when
every differentiable input is a dual tensor, with the tangent ``e_k`` on ``x_i`` and zeros on
the others (torch's check); a mismatch raises torch's "Jacobian computed with forward mode
mismatch" error. With ``check_backward_ad=False`` only that check runs.

Torch's batched and sparse options are accepted; the ones this check cannot honour
(``check_batched_grad``, ``check_batched_forward_grad``) raise ``NotImplementedError`` when
turned on, instead of passing without checking.
"""

from __future__ import annotations

import warnings

import numpy as np

from .api import grad as _grad
from .grad_mode import enable_grad, no_grad
from .tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` / ``gradgradcheck`` when a check fails."""


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, tuple | list) else (x,)


def _float_outputs(out) -> list[Tensor]:
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _refuse_unsupported(**flags) -> None:
    on = [name for name, value in flags.items() if value]
    if on:
        raise NotImplementedError(f"gradcheck: {', '.join(on)}=True is not supported by shardflow (no forward-mode "
                                  "AD or vmap); check reverse mode only (the default)")


def _numerical_jacobian(func, inputs, x: Tensor, n_out: list[int], eps: float) -> list[np.ndarray]:
    """(numel(o_j), numel(x)) per output, by central differences on ``x``'s own array."""
    if not x.array.flags.c_contiguous:
        raise ValueError("gradcheck needs contiguous inputs (use .contiguous())")
    flat = x.array.reshape(-1)
    jac = [np.zeros((n, flat.size)) for n in n_out]
    for k in range(flat.size):
        orig = flat[k].copy()
        flat[k] = orig + eps
        with no_grad():
            plus = [o.array.astype(np.float64).reshape(-1) for o in _float_outputs(func(*inputs))]
        flat[k] = orig - eps
        with no_grad():
            minus = [o.array.astype(np.float64).reshape(-1) for o in _float_outputs(func(*inputs))]
        flat[k] = orig
        for j, (p, m) in enumerate(zip(plus, minus)):
            jac[j][:, k] = (p - m) / (2 * eps)
    return jac


def _analytical_jacobian(output: Tensor, diff_inputs: list[Tensor]) -> list[np.ndarray]:
    """(numel(output), numel(x)) per input: one vector-Jacobian product per output element."""
    n = output.numel()
    jac = [np.zeros((n, x.numel())) for x in diff_inputs]
    if not output.requires_grad:
        return jac
    for m in range(n):
        onehot = np.zeros(n, dtype=output.array.dtype)
        onehot[m] = 1
        grads = _grad([output], diff_inputs, [Tensor(onehot.reshape(output.array.shape))], retain_graph=True,
                      allow_unused=True)
        for i, g in enumerate(grads):
            if g is not None:
                jac[i][m] = np.asarray(g.array, dtype=np.float64).reshape(-1)
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """True when the analytical and numerical Jacobians agree (module docstring)."""
    _refuse_unsupported(check_batched_grad=check_batched_grad, check_batched_forward_grad=check_batched_forward_grad)
    inputs = _as_tuple(inputs)
    diff = [(i, x) for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i, x in diff:
        if x.dtype.is_floating_point and x.array.dtype != np.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. This check "
                          "will likely fail if all the inputs are not of double precision floating point.",
                          UserWarning, stacklevel=2)
    outputs = _float_outputs(func(*inputs))
    if not outputs:
        raise ValueError("gradcheck: the function returned no floating-point tensor, so there is no gradient to check; "
                         "return the differentiable result(s)")
    diff_inputs = [x for _, x in diff]
    numerical = [_numerical_jacobian(func, inputs, x, [o.numel() for o in outputs], eps) for x in diff_inputs]
    checks = []  # (analytical [output][input], message prefix)
    if check_forward_ad:
        forward = _forward_jacobian(func, inputs, diff, [o.numel() for o in outputs])  # [input][output]
        checks.append(([[forward[k][j] for k in range(len(diff))] for j in range(len(outputs))],
                       "Jacobian computed with forward mode mismatch"))
    if check_backward_ad:
        checks.append(([_analytical_jacobian(o, diff_inputs) for o in outputs], "Jacobian mismatch"))
    for analytical, prefix in checks:
        for j in range(len(outputs)):
            for k, (i, _) in enumerate(diff):
                a, n = analytical[j][k], numerical[k][j]
                if not np.allclose(a, n, rtol=rtol, atol=atol):
                    if not raise_exception:
                        return False
                    # torch prints (input element, output element) matrices
                    raise GradcheckError(f"{prefix} for output {j} with respect to input {i},\n"
                                         f"numerical:{n.T}\nanalytical:{a.T}\n")
    return True


def _forward_jacobian(func, inputs: tuple, diff: list, n_out: list[int]) -> list[list[np.ndarray]]:
    """``[input][output]`` forward-mode Jacobians ``(numel(o_j), numel(x_i))``: column ``k`` is
    the outputs' tangent with ``e_k`` on ``x_i`` and zero tangents on the other inputs."""
    from . import forward_ad
    from .tensor import _wrap

    jacobians = []
    for pos, x in diff:
        cols = [np.zeros((n, x.numel())) for n in n_out]
        for k in range(x.numel()):
            args = list(inputs)
            with forward_ad.dual_level():
                for p, other in diff:
                    tangent = np.zeros(other.array.shape, other.array.dtype)
                    if p == pos:
                        tangent.reshape(-1)[k] = 1
                    args[p] = forward_ad.make_dual(other, _wrap(tangent))
                for j, o in enumerate(_float_outputs(func(*args))):
                    t = forward_ad.unpack_dual(o).tangent
                    if t is not None:
                        cols[j][:, k] = np.asarray(t.array, dtype=np.float64).reshape(-1)
        jacobians.append(cols)
    return jacobians


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """``gradcheck`` of the vector-Jacobian product of ``func`` (module docstring)."""
    _refuse_unsupported(check_fwd_over_rev=check_fwd_over_rev, check_batched_grad=check_batched_grad)
    inputs = _as_tuple(inputs)
    outputs = _float_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(Tensor(rng.standard_normal(o.array.shape), requires_grad=True) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"gradgradcheck: got {len(grad_outputs)} grad_outputs for {len(outputs)} floating-point "
                         "outputs; pass one per output")
    n_in = len(inputs)
    diff_positions = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_derivatives(*args):
        # grad mode on: gradcheck evaluates its function under no_grad for the differences,
        # and this one needs a graph to differentiate even then
        with enable_grad():
            xs, vs = args[:n_in], args[n_in:]
            outs = _float_outputs(func(*xs))
            pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
            grads = _grad([o for o, _ in pairs], [xs[i] for i in diff_positions], [v for _, v in pairs],
                          create_graph=True, allow_unused=True)
            return tuple(g for g in grads if g is not None)

    if not check_rev_over_rev:
        return True
    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
