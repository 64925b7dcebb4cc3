"""L-BFGS, a port of ``torch.optim.LBFGS`` (itself after minFunc) onto raw arrays.

``step(closure)`` runs up to ``max_iter`` iterations on the flat vector of all parameters
(one group only; ``closure`` re-evaluates the loss and its gradients):

1. ``g`` = flat gradient. First iteration: direction ``d = -g``. Later ones: with
   ``y = g - g_prev`` and ``s = t * d``, store the pair when ``y.s > 1e-10`` (keeping the
   last ``history_size``), set ``H_diag = y.s / y.y``, and get ``d = -H g`` by the two-loop
   recursion over the stored pairs.
2. Step length: ``t = min(1, 1/|g|_1) * lr`` on the first iteration, else ``lr``. With
   ``line_search_fn="strong_wolfe"`` a bracketing + cubic-interpolation zoom search finds a
   ``t`` meeting the strong Wolfe conditions (c1 = 1e-4, c2 = 0.9; up to ``max_eval`` minus
   evaluations so far); otherwise the parameters move by ``t * d`` and the closure is
   re-evaluated (except on the last iteration).
3. Stop on ``max_iter``, ``max_eval`` closure evaluations, ``max|g| <= tolerance_grad``,
   ``max|t d| <= tolerance_change``, a loss change below ``tolerance_change``, or a
   directional derivative ``g.d > -tolerance_change``.

Scalars stay NumPy scalars of the parameters' dtype where PyTorch keeps 0-d tensors, so a
float32 problem follows torch's float32 arithmetic (comparisons included). The state is
global but registered under the first parameter, with PyTorch's keys (``func_evals``,
``n_iter``, ``d``, ``t``, ``old_dirs``, ``old_stps``, ``ro``, ``H_diag``, ``prev_flat_grad``,
``prev_loss``, ``al``); vectors are stored as Tensors.

Deviation: an unknown ``line_search_fn`` raises at construction (PyTorch raises at the first
``step``).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, _wrap
from .optimizer import Optimizer, _bump, real_view

__all__ = ["LBFGS"]


def _loss_value(loss) -> float:
    """The closure's loss as a float; ``.item()`` rather than ``float()``, which warns for a
    tensor that requires grad (PyTorch's step runs with grad mode off, so it never warns)."""
    return loss.item() if hasattr(loss, "item") else float(loss)


def _dot(a, b):
    """Inner product of two flat vectors without BLAS: OpenBLAS's threaded ``ddot`` took
    19 ms instead of 5 us per call on a loaded 2-core machine (its threads wait for a busy
    core), which made LBFGS steps 10x slower; einsum's single-threaded loop takes ~20 us."""
    return np.einsum("i,i->", a, b)


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to ``bounds``
    (default: the interval between the points); the midpoint when the cubic has none."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Line search along ``d`` from step ``t``: bracket a point meeting the strong Wolfe
    conditions, then zoom in by cubic interpolation. Returns (f, g, t, evaluations)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(g_new, d)

    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1

    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point meets the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # too close to an end of the bracket twice in a row (or outside it): move 10% inside
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Armijo condition fails or no lower than the lowest point: new high end
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True  # Wolfe conditions hold
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]  # old low becomes the high end
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new

    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _raw(v):
    """State value -> array/number for the algorithm (Tensors, incl. torch's, unwrap)."""
    if isinstance(v, Tensor):
        a = v.array
        return a[()] if a.ndim == 0 else a
    if hasattr(v, "detach") and hasattr(v, "numpy"):
        a = v.detach().cpu().numpy()
        return a[()] if a.ndim == 0 else a
    if isinstance(v, list):
        return [_raw(x) for x in v]
    return v


def _stored(v):
    """Array/NumPy scalar -> Tensor for the state (PyTorch keeps tensors there)."""
    if isinstance(v, np.ndarray | np.generic):
        return _wrap(np.asarray(v))
    if isinstance(v, list):
        return [_stored(x) for x in v]
    return v


def _two_loop(flat_grad, h, history_size):
    """``(-H g, al)``: the two-loop recursion with H from the stored pairs and ``H_diag``
    (``al``: the first loop's coefficients, kept in the state as PyTorch does)."""
    old_dirs, old_stps, ro = h.old_dirs, h.old_stps, h.ro
    num_old = len(old_dirs)
    al = [None] * history_size
    q = -flat_grad
    for i in range(num_old - 1, -1, -1):
        al[i] = _dot(old_stps[i], q) * ro[i]
        q += old_dirs[i] * -al[i]
    d = r = q * h.H_diag
    for i in range(num_old):
        be_i = _dot(old_dirs[i], r) * ro[i]
        r += old_stps[i] * (al[i] - be_i)
    return d, al


# the state L-BFGS carries from one step to the next (PyTorch's keys), besides prev_loss
_CARRIED = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad")


class _History:
    """The carried state as arrays and numbers: the last direction ``d`` and step ``t``, the
    stored pairs (``old_dirs``: y, ``old_stps``: s, ``ro``: 1 / y.s), ``H_diag``, the
    previous flat gradient and loss. Read from the state at the start of ``step``, written
    back (as Tensors) at its end."""

    def __init__(self, state):
        for key in _CARRIED:
            setattr(self, key, _raw(state.get(key)))
        self.prev_loss = state.get("prev_loss")

    def save(self, state) -> None:
        for key in _CARRIED:
            state[key] = _stored(getattr(self, key))
        state["prev_loss"] = self.prev_loss


class LBFGS(Optimizer):
    """``LBFGS(params, lr=1, max_iter=20, max_eval=None (max_iter * 5 // 4),
    tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, line_search_fn=None)``;
    ``step(closure)`` needs a closure that zeroes the gradients, computes the loss, calls
    ``backward()`` and returns the loss."""

    _param_shaped_state = ()  # flat vectors over every parameter, kept under the first

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor):
            if lr.numel() != 1:
                raise ValueError("Tensor lr must be 1-element")
            lr = lr.item()
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr} (expected lr >= 0)")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"line_search_fn must be None or 'strong_wolfe', got {line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups); "
                             "pass one list of parameters")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self) -> int:
        if self._numel_cache is None:
            # a complex parameter counts as its real and imaginary parts (torch's view_as_real)
            self._numel_cache = sum(p.array.size * (2 if p.array.dtype.kind == "c" else 1)
                                    for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self) -> np.ndarray:
        return np.concatenate([
            real_view(np.zeros_like(p.array)).reshape(-1) if p.grad is None
            else real_view(np.ascontiguousarray(p.grad.array)).reshape(-1)
            for p in self._params])

    def _add_grad(self, step_size, update) -> None:
        offset = 0
        for p in self._params:
            x = real_view(p.array)  # complex: its (real, imag) entries, as torch's view_as_real
            n = x.size
            x += (update[offset:offset + n] * step_size).reshape(x.shape)
            _bump(p)
            offset += n
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _clone_param(self) -> list[np.ndarray]:
        return [p.array.copy() for p in self._params]

    def _set_param(self, params_data) -> None:
        for p, data in zip(self._params, params_data):
            np.copyto(p.array, data)
            _bump(p)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = _loss_value(self._closure(closure))
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure=None):
        """Up to ``max_iter`` iterations from the current parameters (module docstring):
        each finds a descent direction, a step length, moves (with the line search or by a
        fixed step) and checks the stopping rules. Returns the closure's first loss."""
        if closure is None:
            raise TypeError("LBFGS.step needs a closure that re-evaluates the model and "
                               "returns the loss: optimizer.step(closure)")
        group = self.param_groups[0]
        lr = group["lr"]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._closure(closure)
        loss = _loss_value(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        h = _History(state)
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            self._descent_direction(h, flat_grad, state, group["history_size"])
            if h.prev_flat_grad is None:
                h.prev_flat_grad = flat_grad.copy()
            else:
                np.copyto(h.prev_flat_grad, flat_grad)
            h.prev_loss = loss

            # step length: the first iteration ever scales by the gradient's size
            if state["n_iter"] == 1:
                h.t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                h.t = lr
            gtd = _dot(flat_grad, h.d)
            if gtd > -tolerance_change:  # not a descent direction (any more)
                break

            loss, flat_grad, opt_cond, evals = self._move(
                closure, h, loss, flat_grad, gtd, group, last=n_iter == max_iter,
                evals_left=max_eval - current_evals)
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(h.d * h.t).max() <= tolerance_change:  # the move is negligible
                break
            if abs(loss - h.prev_loss) < tolerance_change:  # so is the loss change
                break

        h.save(state)
        return orig_loss

    def _descent_direction(self, h, flat_grad, state, history_size) -> None:
        """Set ``h.d``: ``-g`` on the first iteration ever; later, first store the pair
        ``(y, s)`` of the last move when ``y.s > 1e-10`` (curvature positive: H stays
        positive definite), then ``d = -H g`` by the two-loop recursion."""
        if state["n_iter"] == 1:
            h.d = -flat_grad
            h.old_dirs, h.old_stps, h.ro = [], [], []
            h.H_diag = 1
            return
        y = flat_grad - h.prev_flat_grad
        s = h.d * h.t
        ys = _dot(y, s)
        if ys > 1e-10:
            if len(h.old_dirs) == history_size:  # keep the last history_size pairs
                h.old_dirs.pop(0)
                h.old_stps.pop(0)
                h.ro.pop(0)
            h.old_dirs.append(y)
            h.old_stps.append(s)
            h.ro.append(1.0 / ys)
            h.H_diag = ys / _dot(y, y)
        h.d, al = _two_loop(flat_grad, h, history_size)
        state["al"] = _stored(al)

    def _move(self, closure, h, loss, flat_grad, gtd, group, last: bool, evals_left: int):
        """Move the parameters along ``h.d``: with ``line_search_fn`` to the step the strong
        Wolfe search finds (``h.t`` updated), else by ``h.t``, re-evaluating the closure
        unless this is the ``last`` iteration (PyTorch's choice). Returns ``(loss, flat grad,
        gradient below tolerance_grad, closure evaluations)``."""
        tolerance_grad = group["tolerance_grad"]
        if group["line_search_fn"] is not None:
            x_init = self._clone_param()

            def obj_func(x, t, d):
                return self._directional_evaluate(closure, x, t, d)

            loss, flat_grad, h.t, evals = _strong_wolfe(
                obj_func, x_init, h.t, h.d, loss, flat_grad, gtd, max_ls=evals_left)
            self._add_grad(h.t, h.d)
            return loss, flat_grad, np.abs(flat_grad).max() <= tolerance_grad, evals
        self._add_grad(h.t, h.d)
        if last:
            return loss, flat_grad, False, 0
        loss = _loss_value(self._closure(closure))
        flat_grad = self._gather_flat_grad()
        return loss, flat_grad, np.abs(flat_grad).max() <= tolerance_grad, 1
