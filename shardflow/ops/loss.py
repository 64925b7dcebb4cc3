"""Losses, each one fused ``Function`` with a hand-written backward (the softmax family is
in ``softmax.py``).

Composing these from small ops would allocate one array per step and record one graph node
per step; here each op is one forward pass over NumPy arrays and one backward pass.

Algorithms:

* ``cross_entropy`` (class-index targets): ``loss_i = lse_i - z_{i,t_i}`` with
  ``z = x - max`` and ``lse = log(sum(exp(z)))`` — the full ``log_softmax`` array is never
  built. With label smoothing ``eps`` (PyTorch's formula)
  ``loss_i = (1-eps) w_t (-log p_t) + eps/C * sum_c w_c (-log p_c)``, and 'mean' divides by
  ``sum_i w_{t_i}`` over non-ignored targets. Backward, with ``r_i = dOut/dloss_i``:
  ``gx_ic = r_i (p_ic A_i - a_ic)`` where ``a_ic = (1-eps) w_t [c = t_i] + eps/C w_c`` and
  ``A_i = sum_c a_ic``; it is written as one scaled copy of ``exp(z)`` plus a scatter at the
  targets. Class-probability targets (float, same shape as input):
  ``loss_i = -sum_c w_c t_ic log p_ic``, 'mean' divides by the number of samples.
* pointwise losses (mse, l1, smooth_l1, huber) keep ``d = input - target`` and compute the
  derivative of the per-element loss in backward; both input and target get gradients
  (broadcasting reduced with ``unbroadcast``).
* ``binary_cross_entropy``: logs clamped at -100 like PyTorch; input grad
  ``w (x - t) / max(x (1 - x), 1e-12)``.
* ``binary_cross_entropy_with_logits``: ``(1 - t) x + (1 + (pw - 1) t) softplus(-x)`` with
  the stable ``softplus(-x) = max(-x, 0) + log1p(exp(-|x|))``.

Class weights, ``pos_weight`` and elementwise loss weights are constants (no gradient), as
in PyTorch. float16/bfloat16 inputs are computed in float32 and cast back.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..autograd.grad_mode import is_grad_enabled
from ..backend import get_array_module
from ..backend.dtypes import _SCALAR_TYPE_NAMES
from ..backend.user_warning import warn_at_caller
from ..kernels import softmax as _sm_kernels
from ._grad_graph import const, sum_to
from ._util import _down, _float_input, _up, flush_subnormal_, promote, unbroadcast
from .reduce import _HALF_KINDS as _HALF

__all__ = [
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
]

_REDUCTIONS = ("none", "mean", "sum")


# ---------------------------------------------------------------------------- helpers


class _InputRangeError(RuntimeError, ValueError):
    """torch raises RuntimeError for a probability outside [0, 1]; shardflow raised ValueError
    before, so both catch it."""

class _ArgumentError(RuntimeError, ValueError):
    """torch raises RuntimeError for a bad loss parameter (beta, delta); shardflow raised
    ValueError before, so both catch it."""


def _raw(t):
    """A constant argument (weight, pos_weight) as a raw array, or None."""
    if t is None:
        return None
    if isinstance(t, Tensor):
        return t.array
    return np.asarray(t)


def no_grad_argument(fname: str, arg: str, t) -> None:
    """torch's refusal of a gradient it does not define (its autograd kernel's
    ``check_no_requires_grad``): a loss weight or target that requires grad while grad mode
    is on is an error there, where shardflow would silently give it no gradient."""
    if isinstance(t, Tensor) and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument '{arg}'. "
                           "This input cannot have requires_grad True.")


def _reduction(size_average, reduce, reduction: str) -> str:
    """Resolve PyTorch's legacy ``size_average`` / ``reduce`` flags into ``reduction``."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction!r} is not a valid value for reduction; expected one of {_REDUCTIONS}")
    return reduction


def _arr(v, like, dtype=None):
    """A 0-d array on ``like``'s device (NumPy reductions return scalars, not arrays)."""
    return get_array_module(like).asarray(v, dtype=like.dtype if dtype is None else dtype)


def _reduce(loss, reduction: str):
    if reduction == "none":
        return loss
    # float16/bfloat16 losses are summed in float32 and rounded once, as PyTorch's sum/mean
    # (NumPy would round every partial sum: a bfloat16 mse_loss of 4096 terms came out half)
    wide = _up(loss)[0]
    if reduction == "sum":
        return _arr(wide.sum(), loss)
    return _arr(wide.mean(), loss)


def _out_grad(g, reduction: str, n):
    """dOut/dloss_i for each element (a scalar array for 'mean'/'sum')."""
    if reduction == "mean":
        return g / n
    return g


# ---------------------------------------------------------------------------- class targets
_TORCH_INT_NAMES = {"int8": "Char", "int16": "Short", "int32": "Int", "bool": "Bool",
                    "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64"}


def _index_target(x_shape, t, ignore_index, fname):
    """Check an integer class-index target against input shape (N, C, d1, ...) and return
    (target safe for indexing, valid mask or None when every target is valid)."""
    C = x_shape[1]
    expected = (x_shape[0], *x_shape[2:])
    if t.dtype.kind in "iub" and t.dtype not in (np.int64, np.uint8):
        # torch's rule and type: class indices are int64 (or uint8); an int32 target (labels
        # from ``torch.from_numpy`` of an int32 array) is refused there, not cast
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_TORCH_INT_NAMES.get(t.dtype.name, t.dtype.name)}: "
            f"{fname} takes class indices as int64 (or uint8); cast the target with target.long()"
        )
    if t.dtype == np.uint8 and len(x_shape) > 2:  # torch's spatial kernel (nll_loss2d) takes int64 only
        raise RuntimeError(
            f"expected scalar type Long but found Byte: {fname} with spatial dimensions takes class "
            "indices as int64; cast the target with target.long()"
        )
    if t.dtype.kind not in "iu":
        raise TypeError(
            f"{fname}: expected class-index targets of an integer dtype with shape {expected}, or "
            f"class-probability targets of shape {tuple(x_shape)}; got a target of dtype {t.dtype} "
            f"and shape {tuple(t.shape)}. Cast index targets with .long()"
        )
    target_batch = t.shape[0] if t.ndim else 0
    if t.shape != expected and target_batch != x_shape[0]:
        # torch checks the batch first, with a ValueError (an old script's 0-d target for a
        # (1, C) input: `criterion(output, target_var[c])`)
        raise ValueError(
            f"Expected input batch_size ({x_shape[0]}) to match target batch_size ({target_batch}). "
            f"{fname}: the target holds one class index per input row, shape {expected} for input "
            f"of shape {tuple(x_shape)}; got {tuple(t.shape)} (a single index t: t.view(1))"
        )
    if t.shape != expected:
        raise RuntimeError(  # torch's type (its message: "0D or 1D target tensor expected")
            f"{fname}: expected target of shape {expected} for input of shape {tuple(x_shape)} "
            f"(class dim 1), got {tuple(t.shape)}"
        )
    ign = t == ignore_index
    if ign.any():
        valid = ~ign
        tt = np.where(valid, t, 0)
    else:
        valid, tt = None, t
    if tt.size:
        lo, hi = tt.min(), tt.max()
        if lo < 0 or hi >= C:
            bad = int(lo if lo < 0 else hi)
            raise IndexError(
                f"{fname}: target {bad} is out of bounds: expected class indices in [0, {C}) "
                f"for input with {C} classes (or ignore_index={ignore_index})"
            )
    return tt, valid


def _class_grad_scale(g, reduction, denom, row_shape):
    """dOut/dloss_i as a Tensor broadcasting over the class dim: (N, 1, d...) for 'none', a
    scalar divided by ``denom`` for 'mean'."""
    if reduction == "none":
        return g.reshape(tuple(row_shape)).unsqueeze(1)
    if reduction == "mean" and float(denom) == 0:  # every target ignored: zero gradient (see _mean_share)
        return g * 0.0
    return g / float(denom) if reduction == "mean" else g


def _mean_share(g, denom):
    """``g / denom`` for a 'mean' over the weights of the non-ignored targets. With every
    target ignored the sum is 0: the loss is NaN (0/0) but torch's gradient is 0 (each
    ignored position's share is never computed), where ``0 * (g/0)`` would be NaN."""
    return g / denom if denom != 0 else g * 0


def _class_shape(nd, C):
    return (1, C) + (1,) * (nd - 2)


def _as_batched(x, t):
    """(C,) input with a scalar target -> (1, C) and (1,)."""
    if x.ndim == 1:
        return x.reshape(1, -1), (None if t is None else t.reshape((1,) + t.shape))
    return x, t


class CrossEntropyIndex(Function):
    save_inputs = ()

    def forward(self, x, t, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        self.in_shape = x.shape
        xa, dt = _up(x)
        xa, t = _as_batched(xa, t)
        C = xa.shape[1]
        tt, valid = _index_target(xa.shape, t, ignore_index, "cross_entropy")
        eps = float(label_smoothing)
        idx = np.expand_dims(tt, 1)  # (N, 1, d...)
        fdt = xa.dtype
        wb = None if weight is None else weight.astype(fdt, copy=False).reshape(_class_shape(xa.ndim, C))
        self.fused = eps == 0 and xa.ndim == 2 and xa.size > 0 and kernels.usable(xa)
        if self.fused:  # one Numba pass per row: z = exp(x - max), s, -log p_t
            z, s, loss = _sm_kernels.cross_entropy_forward(xa, tt)  # (N, C), (N,), (N,)
        else:
            z = xa - xa.max(axis=1, keepdims=True)  # (N, C, d...)
            zt = np.take_along_axis(z, idx, axis=1)[:, 0]  # (N, d...)
            if eps > 0:
                zsum = (z * wb).sum(axis=1) if wb is not None else z.sum(axis=1)
            np.exp(z, out=z)
            s = z.sum(axis=1)  # (N, d...)
            lse = np.log(s)
            loss = lse - zt  # -log p_t
        # coef_i = w_{t_i} * valid_i (None: all ones)
        if weight is not None:
            coef = weight.astype(fdt, copy=False)[tt]
            if valid is not None:
                coef = coef * valid
        else:
            coef = None if valid is None else valid.astype(fdt)
        if coef is not None:
            loss *= coef
        if eps > 0:
            sumw = float(weight.sum()) if weight is not None else float(C)
            smooth = lse * sumw - zsum  # -sum_c w_c log p_c
            if valid is not None:
                smooth *= valid
            loss *= 1.0 - eps
            loss += (eps / C) * smooth
        if reduction == "mean":
            denom = coef.sum() if coef is not None else loss.size
        else:
            denom = 1
        self.e, self.s, self.idx, self.coef, self.valid, self.wb = z, s, idx, coef, valid, wb
        self.eps, self.C, self.reduction, self.denom, self.dt = eps, C, reduction, denom, dt
        self.sumw = float(weight.sum()) if weight is not None else float(C)
        if reduction == "none":
            out = loss.reshape(()) if len(self.in_shape) == 1 else loss
        elif reduction == "sum":
            out = _arr(loss.sum(), loss, fdt)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):  # all ignored: NaN, like PyTorch
                out = _arr(loss.sum() / denom, loss, fdt)
        return _down(out, dt)

    def backward(self, g):
        eps, C, coef = self.eps, self.C, self.coef
        g = g.astype(self.e.dtype, copy=False)
        if self.reduction == "none":
            r = g.reshape(self.s.shape)
        elif self.reduction == "mean":
            r = _mean_share(g, self.denom)
        else:
            r = g
        # A_i * valid_i: (1-eps) w_t + eps/C sum(w), masked
        if eps > 0:
            A = (1.0 - eps) * (coef if coef is not None else 1.0)
            rv = r if self.valid is None else r * self.valid
            # (the bool mask as r's dtype: a bool array times a Python float is float64)
            A = A + (eps / C) * self.sumw * (self.valid.astype(r.dtype) if self.valid is not None else 1.0)
        else:
            A = coef if coef is not None else 1.0
        scale = (r * A) / self.s  # (N, d...)
        if self.fused:  # eps == 0, 2-D: gx = e * scale - [c = t] r w_t
            tgt = np.broadcast_to(r * (coef if coef is not None else 1.0), self.s.shape)
            gx = _sm_kernels.cross_entropy_backward(
                self.e, np.broadcast_to(scale, self.s.shape), self.idx[:, 0], tgt)
            return _down(gx.reshape(self.in_shape), self.dt)
        gx = self.e * np.expand_dims(scale, 1)
        if eps > 0:
            wb = self.wb if self.wb is not None else 1.0
            gx -= (eps / C) * np.expand_dims(np.broadcast_to(rv, self.s.shape), 1) * wb
        tgt = (1.0 - eps) * r * (coef if coef is not None else 1.0)
        tgt = np.expand_dims(np.broadcast_to(tgt, self.s.shape), 1)
        cur = np.take_along_axis(gx, self.idx, axis=1)
        np.put_along_axis(gx, self.idx, cur - tgt, axis=1)
        flush_subnormal_(gx)  # p/N of a confident prediction: see flush_subnormal_
        return _down(gx.reshape(self.in_shape), self.dt)

    def backward_graph(self, g):
        """``gx = r (softmax(x) A - a)`` on Tensors with the target table ``a`` (the
        weighted, smoothed one-hot of the module docstring; ``A = sum_c a``) constant.
        The input is rebuilt as ``log(exp(x - max))``: softmax does not see the shift."""
        e = self.e
        with np.errstate(divide="ignore"):
            z = np.log(np.maximum(e, np.finfo(e.dtype).tiny))  # x - max, (N, C, d...)
        x = self.saved_input(0, _down(z, self.dt).reshape(self.in_shape)).reshape(e.shape)
        a = self._target_table().astype(g.array.dtype, copy=False)
        p = x.softmax(dim=1)
        return (_class_grad_scale(g, self.reduction, self.denom, self.s.shape)
                * (p * const(a.sum(axis=1, keepdims=True)) - const(a))).reshape(self.in_shape)

    def _target_table(self):
        """``a_ic = (1-eps) w_t [c = t_i] valid_i + eps/C w_c valid_i`` (N, C, d...)."""
        xp = get_array_module(self.e)
        fdt = self.e.dtype
        a = xp.zeros(self.e.shape, dtype=fdt)
        coef = self.coef if self.coef is not None else xp.ones(self.s.shape, dtype=fdt)
        np.put_along_axis(a, self.idx, np.expand_dims((1.0 - self.eps) * coef, 1), axis=1)
        if self.eps > 0:
            wb = self.wb if self.wb is not None else 1.0
            valid = np.expand_dims(self.valid, 1) if self.valid is not None else 1.0
            a += (self.eps / self.C) * wb * valid
        return a


class CrossEntropyProb(Function):
    save_inputs = ()

    def forward(self, x, t, weight=None, reduction="mean", label_smoothing=0.0):
        self.in_shape = x.shape
        xa, dt = _up(x)
        ta = t.astype(xa.dtype, copy=False)
        self.t = ta  # for backward_graph (a reference: the caller holds the target)
        xa, ta = _as_batched(xa, ta)
        C = xa.shape[1]
        eps = float(label_smoothing)
        z = xa - xa.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))  # (N, C, d...)
        tt = ta * (1.0 - eps) + eps / C if eps > 0 else ta
        wb = None if weight is None else weight.astype(xa.dtype, copy=False).reshape(_class_shape(xa.ndim, C))
        wt = tt * wb if wb is not None else tt
        loss = -(wt * logp).sum(axis=1)  # (N, d...)
        n = loss.size
        self.logp, self.wt, self.wb, self.eps, self.reduction, self.n, self.dt = logp, wt, wb, eps, reduction, n, dt
        if reduction == "none":
            out = loss.reshape(()) if len(self.in_shape) == 1 else loss
        elif reduction == "sum":
            out = _arr(loss.sum(), loss, xa.dtype)
        else:
            out = _arr(loss.sum() / n, loss, xa.dtype)
        return _down(out, dt)

    def backward(self, g):
        g = g.astype(self.logp.dtype, copy=False)
        if self.reduction == "none":
            r = np.expand_dims(g.reshape(self.logp.shape[:1] + self.logp.shape[2:]), 1)
        else:
            r = _out_grad(g, self.reduction, self.n)
        gx = gt = None
        if self.needs_input_grad[0]:
            p = np.exp(self.logp)
            gx = flush_subnormal_(r * (p * self.wt.sum(axis=1, keepdims=True) - self.wt))
            gx = _down(gx.reshape(self.in_shape), self.dt)
        if self.needs_input_grad[1]:
            gt = -r * self.logp * (1.0 - self.eps)
            if self.wb is not None:
                gt = gt * self.wb
            gt = _down(gt.reshape(self.in_shape), self.dt)
        return gx, gt

    def backward_graph(self, g):
        """The backward's formulas on Tensors: ``log_softmax`` recomputed from the input
        (rebuilt as ``logp``, which differs from it by a shift per row softmax does not
        see) and the smoothed, weighted target from the target."""
        lshape, need, eps = self.logp.shape, self.needs_input_grad, self.eps
        C = lshape[1]
        x = self.saved_input(0, _down(self.logp, self.dt).reshape(self.in_shape)).reshape(lshape)
        t = self.saved_input(1, _down(self.t, self.dt)).reshape(lshape)
        logp = x.log_softmax(dim=1)
        wt = t * (1.0 - eps) + eps / C if eps > 0 else t
        if self.wb is not None:
            wt = wt * const(self.wb.astype(g.array.dtype, copy=False))
        r = _class_grad_scale(g, self.reduction, self.n, lshape[:1] + lshape[2:])
        gx = gt = None
        if need[0]:
            gx = (r * (logp.exp() * wt.sum(dim=1, keepdim=True) - wt)).reshape(self.in_shape)
        if need[1]:
            gt = -r * logp * (1.0 - eps)
            if self.wb is not None:
                gt = gt * const(self.wb.astype(g.array.dtype, copy=False))
            gt = gt.reshape(self.in_shape)
        return gx, gt


@register("cross_entropy")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits ``input`` (N, C, d1, ...) or (C,) and ``target``:
    class indices (integer, shape (N, d1, ...)) or class probabilities (float, same shape
    as input). Fused log-softmax + NLL; see the module docstring for the formulas."""
    reduction = _reduction(size_average, reduce, reduction)
    input = _float_input(input)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0.0, 1.0], got {label_smoothing}")
    if input.array.ndim == 0:
        raise ValueError("cross_entropy: input must have a class dimension: shape (C,) or (N, C, ...), got a scalar")
    w = _raw(weight)
    C = input.shape[1] if input.array.ndim > 1 else input.shape[0]
    if w is not None and w.shape != (C,):
        raise ValueError(f"cross_entropy: weight must have shape ({C},) (one per class), got {tuple(w.shape)}")
    ta = target.array if isinstance(target, Tensor) else np.asarray(target)
    if ta.dtype.kind == "f" or ta.dtype.kind == "V":
        if ta.shape != tuple(input.shape):
            exp_idx = (input.shape[0], *input.shape[2:]) if input.array.ndim > 1 else ()
            if ta.shape == exp_idx:  # class indices held as floats (labels from a float array)
                raise RuntimeError(
                    f"expected target dtype to be Long or Byte, but got {_torch_dtype_name(ta.dtype)}: "
                    f"a target of shape {exp_idx} holds class indices; make it an integer tensor "
                    "(target.long()), or give class probabilities of the input's shape "
                    f"{tuple(input.shape)}"
                )
            # torch's types: ValueError for a batch-size mismatch, RuntimeError for any other shape
            batch_differs = ta.ndim >= 1 and input.array.ndim >= 2 and ta.shape[0] != input.shape[0]
            raise (ValueError if batch_differs else RuntimeError)(
                f"cross_entropy: a float target means class probabilities and must have the input's "
                f"shape {tuple(input.shape)}, got {tuple(ta.shape)}; for class indices of shape "
                f"{exp_idx} use an integer target (target.long())"
            )
        if not isinstance(target, Tensor):
            target = Tensor(ta)
        if isinstance(weight, Tensor) and weight.requires_grad and is_grad_enabled():
            return _cross_entropy_prob_composite(input, target, weight, reduction, label_smoothing)
        return CrossEntropyProb.apply(input, target, weight=w, reduction=reduction, label_smoothing=label_smoothing)
    no_grad_argument("nll_loss2d_forward" if input.ndim > 2 else "nll_loss_forward", "weight", weight)
    if input.array.dtype in _HALF and label_smoothing == 0.0:
        # float16/bfloat16: torch's composition, log_softmax (rounded to the input's dtype,
        # with its lse rounding) then nll_loss; the fused float32 path rounded once and was
        # an ulp off in a quarter of bfloat16 per-sample losses, its gradient in most entries
        return nll_loss(input.log_softmax(1 if input.array.ndim > 1 else 0), target if isinstance(target, Tensor)
                        else Tensor(ta), weight=weight, ignore_index=ignore_index, reduction=reduction)
    return CrossEntropyIndex.apply(input, ta, weight=w, ignore_index=ignore_index, reduction=reduction,
                                   label_smoothing=label_smoothing)


def _cross_entropy_prob_composite(input, target, weight, reduction, label_smoothing):
    """Class-probability cross entropy from differentiable ops, for a ``weight`` that
    requires grad (``CrossEntropyProb`` holds the weight as a constant). torch's composite:
    ``-(log_softmax(x) * t' * w).sum(class)`` with ``t' = t (1 - eps) + eps / C``; 'mean'
    divides by the number of rows (input.numel() / C), not by the weights."""
    cdim = 1 if input.ndim > 1 else 0
    C = input.shape[cdim]
    if label_smoothing > 0:
        target = target * (1.0 - label_smoothing) + label_smoothing / C
    wshape = [1] * input.ndim
    wshape[cdim] = C
    loss = -(input.log_softmax(cdim) * target * weight.reshape(wshape)).sum(cdim)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (input.numel() // C)


def _torch_dtype_name(dtype) -> str:
    """torch's word for a float dtype in its messages (``Float``, ``Double``, ``Half``)."""
    return _SCALAR_TYPE_NAMES.get(np.dtype(dtype).name, "BFloat16")


class NllLoss(Function):
    save_inputs = ()

    def forward(self, x, t, weight=None, ignore_index=-100, reduction="mean"):
        self.in_shape = x.shape
        xb, t = _as_batched(x, t)
        tt, valid = _index_target(xb.shape, t, ignore_index, "nll_loss")
        idx = np.expand_dims(tt, 1)
        loss = -np.take_along_axis(xb, idx, axis=1)[:, 0]
        if weight is not None:
            coef = weight.astype(x.dtype, copy=False)[tt]
            if valid is not None:
                coef = coef * valid
        else:
            coef = None if valid is None else valid.astype(x.dtype)
        if coef is not None:
            loss *= coef
        # (the weight total in float32 for 2-byte dtypes, as the sum below)
        denom = (_up(coef)[0].sum() if coef is not None
                 else loss.size) if reduction == "mean" else 1
        self.idx, self.coef, self.reduction, self.denom, self.bshape = idx, coef, reduction, denom, xb.shape
        if reduction == "none":
            return loss.reshape(()) if x.ndim == 1 else loss
        # float16/bfloat16 summed in float32 (NumPy's 2-byte sum stalls: a bfloat16 mean of
        # 4.16 over many rows came out 1.98)
        wide = _up(loss)[0]
        if reduction == "sum":
            return _arr(wide.sum(), loss, x.dtype)
        with np.errstate(invalid="ignore", divide="ignore"):  # all ignored: NaN, like PyTorch
            return _arr(wide.sum() / denom, loss, x.dtype)

    def backward(self, g):
        if self.reduction == "none":
            r = g.reshape(self.idx.shape[:1] + self.idx.shape[2:])
        else:
            r = _mean_share(g, self.denom) if self.reduction == "mean" else g
        v = -r * self.coef if self.coef is not None else -r
        v = np.expand_dims(np.broadcast_to(v, self.idx.shape[:1] + self.idx.shape[2:]), 1)
        gx = get_array_module(g).zeros(self.bshape, dtype=g.dtype)
        np.put_along_axis(gx, self.idx, v.astype(g.dtype, copy=False), axis=1)
        return gx.reshape(self.in_shape)

    def backward_graph(self, g):
        """``gx = r * M``: linear in ``g``, with ``M`` the constant table of ``-w_t`` at the
        targets."""
        m = get_array_module(self.idx).zeros(self.bshape, dtype=g.array.dtype)
        rows = self.idx.shape[:1] + self.idx.shape[2:]
        v = -self.coef if self.coef is not None else -np.ones(rows, dtype=g.array.dtype)
        np.put_along_axis(m, self.idx, np.expand_dims(v, 1).astype(g.array.dtype, copy=False), axis=1)
        return (_class_grad_scale(g, self.reduction, self.denom, rows) * const(m)).reshape(self.in_shape)


@register("nll_loss")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood ``-w_t * input[t]`` for log-probabilities (N, C, d1, ...) or
    (C,); 'mean' divides by the sum of the weights of non-ignored targets."""
    reduction = _reduction(size_average, reduce, reduction)
    input = _float_input(input)
    if input.array.ndim == 0:
        raise ValueError("nll_loss: input must have a class dimension: shape (C,) or (N, C, ...), got a scalar")
    ta = target.array if isinstance(target, Tensor) else np.asarray(target)
    w = _raw(weight)
    C = input.shape[1] if input.array.ndim > 1 else input.shape[0]
    if w is not None and w.shape != (C,):
        raise ValueError(f"nll_loss: weight must have shape ({C},) (one per class), got {tuple(w.shape)}")
    no_grad_argument("nll_loss2d_forward" if input.ndim > 2 else "nll_loss_forward", "weight", weight)
    return NllLoss.apply(input, ta, weight=w, ignore_index=ignore_index, reduction=reduction)


# ---------------------------------------------------------------------------- pointwise losses
class PointwiseLoss(Function):
    """``loss = weight * f(input - target)`` for f in mse / l1 / smooth_l1 / huber."""

    save_inputs = ()

    def forward(self, x, t, kind="mse", param=1.0, reduction="mean", weight=None):
        self.sx, self.st = np.shape(x), np.shape(t)
        d = x - t
        self.d, self.kind, self.param, self.reduction, self.weight = d, kind, param, reduction, weight
        self.x, self.t = x, t  # references, for backward_graph
        if kind == "mse":
            loss = d * d
        elif kind == "l1":
            loss = np.abs(d)
        else:
            a = np.abs(d)
            p = param
            small = a < p
            if kind == "smooth_l1":
                loss = np.where(small, 0.5 * d * d / p if p > 0 else 0.0, a - 0.5 * p)
            else:  # huber
                loss = np.where(small, 0.5 * d * d, p * (a - 0.5 * p))
            loss = loss.astype(d.dtype, copy=False)
        self.n = loss.size
        if weight is not None:
            loss = loss * weight
            if kind in ("mse", "l1"):  # PyTorch: weighted mse/l1 'mean' divides by sum(weight)
                self.n = np.broadcast_to(weight, loss.shape).sum()
        if reduction == "mean":
            wide = _up(loss)[0]  # (as _reduce)
            return _arr(wide.sum() / self.n, loss)
        return _reduce(loss, reduction)

    def backward(self, g):
        d, kind, p = self.d, self.kind, self.param
        if kind == "mse":
            dd = 2.0 * d
        elif kind == "l1":
            dd = np.sign(d)
        elif kind == "smooth_l1":
            dd = np.clip(d / p, -1.0, 1.0) if p > 0 else np.sign(d)
        else:
            dd = np.clip(d, -p, p)
        dd = dd * _out_grad(g, self.reduction, self.n)
        if self.weight is not None:
            dd = dd * self.weight
        dd = dd.astype(d.dtype, copy=False)
        gx = unbroadcast(dd, self.sx) if self.needs_input_grad[0] else None
        gt = unbroadcast(-dd, self.st) if self.needs_input_grad[1] else None
        return gx, gt

    def backward_graph(self, g):
        """``f'(d) * dOut/dloss`` on Tensors, ``d = input - target`` recomputed from the
        inputs; the piecewise parts (sign, the clip's region) are constant masks."""
        d, kind, p = self.d, self.kind, self.param
        dt = g.array.dtype
        if kind == "mse":
            dd = 2.0 * (self.saved_input(0, self.x) - self.saved_input(1, self.t))
        elif kind == "l1" or (kind == "smooth_l1" and p <= 0):
            dd = const(np.sign(d).astype(dt, copy=False))
        else:
            small = np.abs(d) < p
            lin = self.saved_input(0, self.x) - self.saved_input(1, self.t)
            lin = lin * const((small / p if kind == "smooth_l1" else small).astype(dt))
            dd = lin + const(np.where(small, 0.0, np.sign(d) * (1.0 if kind == "smooth_l1" else p)).astype(dt))
        dd = dd * (g / float(self.n) if self.reduction == "mean" else g)
        if self.weight is not None:
            dd = dd * const(self.weight)
        gx = sum_to(dd, self.sx) if self.needs_input_grad[0] else None
        gt = sum_to(-dd, self.st) if self.needs_input_grad[1] else None
        return gx, gt


# the names of torch's CPU/CUDA kernels in its "not implemented for 'ComplexFloat'" errors
_COMPLEX_KERNEL = {"mse": "mse", "smooth_l1": "smooth_l1", "huber": "huber"}
_COMPLEX_NAME = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _complex_pointwise(x, t, kind, reduction, weight):
    """A complex ``input - target``, as torch: ``l1_loss`` is ``|d|`` (real, gradient
    ``sgn(d)``), weighted ``mse_loss`` is torch's Python ``d**2 * weight`` (complex); the
    kernels (``mse``, ``smooth_l1``, ``huber``) raise torch's ``NotImplementedError``."""
    if kind == "l1":
        loss = (x - t).abs()
    elif kind == "mse" and weight is not None:
        loss = (x - t) ** 2
    else:
        dev = "cuda" if x.device.type == "cuda" else "cpu"
        raise NotImplementedError(
            f"\"{_COMPLEX_KERNEL[kind]}_{dev}\" not implemented for "
            f"'{_COMPLEX_NAME[x.array.dtype.name]}'")
    if weight is not None:
        w = weight if isinstance(weight, Tensor) else Tensor(np.asarray(weight))
        loss = loss * w
        if reduction == "mean":
            return loss.sum() / w.sum()
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _pointwise(name, input, target, kind, param, reduction, weight):
    x, t = promote(input, target)
    if not isinstance(t, Tensor):
        t = Tensor(np.asarray(t, dtype=x.array.dtype))
    if x.dtype.is_complex:
        return _complex_pointwise(x, t, kind, reduction, weight)
    if t.array.shape != x.array.shape:  # PyTorch's warning: a (N, 1) output against (N,) targets
        warn_at_caller(f"Using a target size ({t.shape}) that is different to the input size ({x.shape}). "
                       "This will likely lead to incorrect results due to broadcasting. Please ensure they "
                       "have the same size.")
    if not x.dtype.is_floating_point:
        x, t = _float_input(x), _float_input(t)
    try:
        shape = np.broadcast_shapes(x.array.shape, t.array.shape)
    except ValueError:
        raise ValueError(
            f"{name}: input shape {tuple(x.shape)} and target shape {tuple(t.shape)} do not broadcast; "
            "pass a target of the input's shape"
        ) from None
    w = _raw(weight)
    if w is not None:
        w = w.astype(x.array.dtype, copy=False)
        if np.broadcast_shapes(shape, w.shape) != shape:
            raise ValueError(f"{name}: weight shape {tuple(w.shape)} must broadcast to {shape}")
    return PointwiseLoss.apply(x, t, kind=kind, param=param, reduction=reduction, weight=w)


@register("mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Squared error ``weight * (input - target)**2``; with ``weight``, 'mean' divides by
    ``sum(weight)`` (PyTorch's rule)."""
    return _pointwise("mse_loss", input, target, "mse", 0.0, _reduction(size_average, reduce, reduction), weight)


@register("l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Absolute error ``weight * |input - target|`` (gradient sign(d), 0 at d = 0); with
    ``weight``, 'mean' divides by ``sum(weight)``."""
    return _pointwise("l1_loss", input, target, "l1", 0.0, _reduction(size_average, reduce, reduction), weight)


@register("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (beta = 0: L1)."""
    if beta < 0:
        raise _ArgumentError(f"smooth_l1_loss does not support negative values for beta (got {beta}); "
                             "use beta >= 0")
    return _pointwise("smooth_l1_loss", input, target, "smooth_l1", float(beta),
                      _reduction(size_average, reduce, reduction), None)


@register("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    if delta <= 0:
        raise _ArgumentError(f"huber_loss does not support non-positive values for delta (got {delta}); "
                             "use delta > 0")
    return _pointwise("huber_loss", input, target, "huber", float(delta), _reduction(None, None, reduction), weight)


# ---------------------------------------------------------------------------- binary losses
class BinaryCrossEntropy(Function):
    save_inputs = ()

    def forward(self, x, t, weight=None, reduction="mean"):
        lx = np.maximum(np.log(x), -100.0)
        l1x = np.maximum(np.log1p(-x), -100.0)
        loss = -(t * lx + (1.0 - t) * l1x)
        if weight is not None:
            loss = loss * weight
        loss = loss.astype(x.dtype, copy=False)
        self.x, self.t, self.lx, self.l1x, self.w, self.reduction, self.n = x, t, lx, l1x, weight, reduction, loss.size
        return _reduce(loss, reduction)

    def backward(self, g):
        r = _out_grad(g, self.reduction, self.n)
        if self.w is not None:
            r = r * self.w
        gx = gt = None
        x, t = self.x, self.t
        if self.needs_input_grad[0]:
            gx = (r * (x - t) / np.maximum(x * (1.0 - x), 1e-12)).astype(x.dtype, copy=False)
        if self.needs_input_grad[1]:
            gt = (-r * (self.lx - self.l1x)).astype(t.dtype, copy=False)
        return gx, gt

    def backward_graph(self, g):
        """The backward's formulas on Tensors; where forward's clamps bind (``x (1 - x)``
        under 1e-12, a log under -100) the clamped value is a constant."""
        x, t = self.x, self.t
        X, T = self.saved_input(0, x), self.saved_input(1, t)
        r = g / float(self.n) if self.reduction == "mean" else g
        if self.w is not None:
            r = r * const(self.w)
        gx = gt = None
        if self.needs_input_grad[0]:
            live = x * (1.0 - x) > 1e-12
            den = X * (1.0 - X) * const(live.astype(x.dtype)) + const(np.where(live, 0.0, 1e-12).astype(x.dtype))
            gx = r * (X - T) / den
        if self.needs_input_grad[1]:
            gt = -r * (_clamped_log(X, x) - _clamped_log(1.0 - X, 1.0 - x))
        return gx, gt


def _clamped_log(v, va):
    """``max(log(v), -100)`` of the Tensor ``v`` (array ``va``), with the clamped entries
    constant (their log is never taken: a log of 0 would give -inf * 0 = NaN)."""
    with np.errstate(divide="ignore"):
        live = np.log(va) > -100.0
    m = live.astype(va.dtype)
    safe = v * const(m) + const(1.0 - m)  # 1 where clamped: log 1 = 0
    return safe.log() * const(m) + const(np.where(live, 0.0, -100.0).astype(va.dtype))


@register("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-w (t log x + (1 - t) log(1 - x))`` for probabilities x in [0, 1] (logs clamped at
    -100 like PyTorch, so x = 0 or 1 gives a finite loss)."""
    reduction = _reduction(size_average, reduce, reduction)
    x, t = promote(_float_input(input), target)
    if not isinstance(t, Tensor):
        t = Tensor(np.asarray(t, dtype=x.array.dtype))
    if t.shape != x.shape:
        raise ValueError(
            f"binary_cross_entropy: target size {tuple(t.shape)} must equal input size {tuple(x.shape)}"
        )
    xa = x.array
    if xa.size and (xa.min() < 0 or xa.max() > 1):
        raise _InputRangeError(
            "binary_cross_entropy: all elements of input should be between 0 and 1 (probabilities); "
            "for logits use binary_cross_entropy_with_logits"
        )
    no_grad_argument("binary_cross_entropy", "weight", weight)
    w = _raw(weight)
    if w is not None:
        w = np.broadcast_to(w.astype(xa.dtype, copy=False), xa.shape)
    return BinaryCrossEntropy.apply(x, t, weight=w, reduction=reduction)


class BCEWithLogits(Function):
    save_inputs = ()

    def forward(self, x, t, weight=None, pos_weight=None, reduction="mean"):
        sp = np.maximum(-x, 0.0) + np.log1p(np.exp(-np.abs(x)))  # softplus(-x)
        if pos_weight is not None:
            lw = 1.0 + (pos_weight - 1.0) * t
            loss = (1.0 - t) * x + lw * sp
        else:
            lw = None
            loss = (1.0 - t) * x + sp
        if weight is not None:
            loss = loss * weight
        loss = loss.astype(x.dtype, copy=False)
        self.x, self.t, self.sp, self.lw, self.w, self.pw = x, t, sp, lw, weight, pos_weight
        self.reduction, self.n, self.shape = reduction, loss.size, loss.shape
        return _reduce(loss, reduction)

    def backward(self, g):
        r = _out_grad(g, self.reduction, self.n)
        if self.w is not None:
            r = r * self.w
        x, t = self.x, self.t
        gx = gt = None
        if self.needs_input_grad[0]:
            sig_neg = 0.5 * (1.0 - np.tanh(0.5 * x))  # sigmoid(-x), stable
            lw = self.lw if self.lw is not None else 1.0
            gx = r * ((1.0 - t) - lw * sig_neg)
            gx = unbroadcast(np.broadcast_to(gx, self.shape), x.shape).astype(x.dtype, copy=False)
        if self.needs_input_grad[1]:
            gt = -x if self.pw is None else -x + (self.pw - 1.0) * self.sp
            gt = unbroadcast(np.broadcast_to(r * gt, self.shape), t.shape).astype(t.dtype, copy=False)
        return gx, gt

    def backward_graph(self, g):
        """The backward's formulas on Tensors (``sigmoid``, ``softplus``)."""
        from .elementwise import softplus

        X, T = self.saved_input(0, self.x), self.saved_input(1, self.t)
        r = g / float(self.n) if self.reduction == "mean" else g
        if self.w is not None:
            r = r * const(self.w)
        pw = None if self.pw is None else const(self.pw)
        gx = gt = None
        if self.needs_input_grad[0]:
            lw = 1.0 if pw is None else 1.0 + (pw - 1.0) * T
            gx = sum_to(r * ((1.0 - T) - lw * (-X).sigmoid()), self.x.shape)
        if self.needs_input_grad[1]:
            d = -X if pw is None else -X + (pw - 1.0) * softplus(-X)
            gt = sum_to(r * d, self.t.shape)
        return gx, gt


@register("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """``(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``, times ``weight`` (stable for
    large |x|). ``pos_weight`` broadcasts over the last (class) dimension."""
    reduction = _reduction(size_average, reduce, reduction)
    x, t = promote(_float_input(input), target)
    if not isinstance(t, Tensor):
        t = Tensor(np.asarray(t, dtype=x.array.dtype))
    if t.shape != x.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: target size {tuple(t.shape)} must equal input size "
            f"{tuple(x.shape)}"
        )
    dt = x.array.dtype
    no_grad_argument("binary_cross_entropy_with_logits", "weight", weight)
    no_grad_argument("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    w, pw = _raw(weight), _raw(pos_weight)
    w = None if w is None else w.astype(dt, copy=False)
    pw = None if pw is None else pw.astype(dt, copy=False)
    return BCEWithLogits.apply(x, t, weight=w, pos_weight=pw, reduction=reduction)


class KLDiv(Function):
    save_inputs = ()

    def forward(self, x, t, reduction="mean", log_target=False):
        if log_target:
            et = np.exp(t)
            loss = et * (t - x)
            self.et = et
        else:
            # torch's formula, xlogy(t, t) - t * x: a zero target still multiplies the input,
            # so an input of -inf or nan there gives nan (log(0) = -inf is how a
            # probability of 0 reaches a log-softmax output), and a negative target gives nan
            zero = t == 0
            with np.errstate(divide="ignore", invalid="ignore"):
                # (the fills in t's dtype: a Python float beside a bfloat16 array made the whole
                # formula float64, rounded once; torch rounds log, xlogy, t * x and the difference)
                one, zero_ = t.dtype.type(1), t.dtype.type(0)
                logt = np.log(np.where(zero, one, t))
                loss = (np.where(zero, zero_, t * logt) - t * x).astype(x.dtype, copy=False)
            self.logt = logt
        self.x, self.t, self.log_target, self.reduction = x, t, log_target, reduction
        self.shape = loss.shape
        if reduction == "batchmean":
            self.n = x.shape[0] if x.ndim else 1
            return _arr(_reduce(loss, "sum") / self.n, loss)  # torch: sum() / batch, both rounded
        self.n = loss.size
        return _reduce(loss, reduction)

    def backward(self, g):
        red = "mean" if self.reduction == "batchmean" else self.reduction
        r = _out_grad(g, red, self.n)
        x, t = self.x, self.t
        gx = gt = None
        if self.needs_input_grad[0]:
            src = self.et if self.log_target else t
            gx = unbroadcast(np.broadcast_to(-r * src, self.shape), x.shape).astype(x.dtype, copy=False)
        if self.needs_input_grad[1]:
            if self.log_target:
                d = self.et * (t - x + 1.0)
            else:  # torch's: d/dt xlogy(t, t) = log(t) + t/t, which is nan at t = 0
                d = np.where(t == 0, np.nan, self.logt + 1.0 - x)
            gt = unbroadcast(np.broadcast_to(r * d, self.shape), t.shape).astype(t.dtype, copy=False)
        return gx, gt

    def backward_graph(self, g):
        """The backward's formulas on Tensors (``t > 0`` a constant mask)."""
        x, t = self.x, self.t
        X, T = self.saved_input(0, x), self.saved_input(1, t)
        red = "mean" if self.reduction == "batchmean" else self.reduction
        r = g / float(self.n) if red == "mean" else g
        gx = gt = None
        if self.log_target:
            et = T.exp()
            if self.needs_input_grad[0]:
                gx = sum_to(-r * et, x.shape)
            if self.needs_input_grad[1]:
                gt = sum_to(r * et * (T - X + 1.0), t.shape)
            return gx, gt
        if self.needs_input_grad[0]:
            gx = sum_to(-r * T, x.shape)
        if self.needs_input_grad[1]:
            zero = t == 0  # nan there, as the first backward (torch's xlogy derivative)
            m = const((~zero).astype(t.dtype))
            logt = (T * m + (1.0 - m)).log()
            gt = sum_to(r * (logt + 1.0 - X + const(np.where(zero, np.nan, 0.0).astype(t.dtype))), t.shape)
        return gx, gt


@register("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence with ``input`` as log-probabilities: ``xlogy(t, t) - t x`` as torch computes
    it (where t = 0 the term is ``-0 * x``: nan when x is -inf or nan; its target gradient is
    nan there, torch's xlogy derivative), or
    ``exp(t) (t - x)`` with ``log_target``. 'batchmean' divides the sum by the batch size."""
    if reduction != "batchmean":
        reduction = _reduction(size_average, reduce, reduction)
    if reduction == "mean":  # PyTorch's warning, word for word
        warn_at_caller("reduction: 'mean' divides the total loss by both the batch size and the support size."
                       "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                       "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    x, t = promote(_float_input(input), target)
    if not isinstance(t, Tensor):
        t = Tensor(np.asarray(t, dtype=x.array.dtype))
    return KLDiv.apply(x, t, reduction=reduction, log_target=log_target)
