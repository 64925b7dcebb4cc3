"""``ctc_loss``: Connectionist Temporal Classification (Graves et al. 2006), as
``torch.nn.functional.ctc_loss``.

Inputs: ``log_probs`` ``(T, N, C)`` (or ``(T, C)`` unbatched), log-probabilities over ``C``
classes with class ``blank`` the blank; ``targets`` ``(N, S)`` padded or 1-D concatenated
(``sum(target_lengths)``); ``input_lengths`` / ``target_lengths`` ``(N,)`` (tensors or
sequences of ints).

Algorithm (batched over samples, looped over time, in float64; the two recursions are stepped
together, ``_recursions``): each target ``l`` is
extended with blanks to ``l' = (b, l1, b, l2, ..., b)`` (``2 S_n + 1`` states). The forward
variables ``alpha_t(s) = logsumexp(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2)) +
log_probs[t, l'(s)]`` (the ``s-2`` skip only onto a label differing from ``l'(s-2)``) and
the backward variables ``beta`` (the mirror recursion from ``T_n - 1``) give the negative
log-likelihood ``nll_n = -logsumexp(alpha_{T_n-1}(2S_n), alpha_{T_n-1}(2S_n - 1))``.

Gradient: PyTorch's, ``exp(log_probs[t, k]) - sum_{s: l'(s)=k} exp(alpha_t(s) + beta_t(s) +
nll - log_probs[t, k])`` for ``t < T_n`` (zero after). That is the gradient with respect
to the *logits* when ``log_probs = log_softmax(logits)`` — the term ``exp(log_probs)``
vanishes through log_softmax's backward, since the occupation probabilities sum to one per
step — and it is what PyTorch returns for ``log_probs`` itself; so results through
``log_softmax`` (the documented use) match PyTorch and finite differences, and a
gradient taken at ``log_probs`` directly matches PyTorch (not finite differences).

Reductions: ``'none'`` ``(N,)``; ``'sum'``; ``'mean'`` (PyTorch's: each loss divided by its
target length, clamped to 1, then the batch mean). ``zero_infinity`` replaces infinite
losses (no alignment possible, e.g. a target longer than the input) and their gradients by
zero.

An input length of 0 is accepted, as torch does: the loss is 0 (``-0.0``) for an empty
target and ``inf`` otherwise, the gradient 0. Argument checks are torch's, in its order and
with its messages (``ctc_loss_allocate_outputs``), except that a target label outside
``[0, C)`` is refused (torch's CPU kernel reads past the class dimension there).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module

__all__ = ["ctc_loss"]

_NEG_INF = -np.inf


def _lse(*xs):
    """logsumexp of same-shaped arrays, elementwise (-inf where all are -inf)."""
    m = np.maximum.reduce(xs)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(sum(np.exp(x - safe) for x in xs)) + safe


def _lse_stacked(x):
    """``_lse(x[0], x[1], x[2])`` of a stacked (3, ...) array, in its order of operations
    (the caller ignores log(0)'s divide warning)."""
    m = np.maximum.reduce(x)
    safe = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - safe)
    s = e[0] + e[1]
    s += e[2]
    return np.log(s) + safe


def _recursions(lpe, skip, skip_next, valid, end, tgt_len, in_len):
    """``alpha`` and ``beta`` (T, N, Lp), both recursions stepped together.

    ``beta`` is kept reversed in time and in the states, so that it too reads step ``u - 1``
    at states ``s, s - 1, s - 2``: one buffer ``(T, 2, N, Lp + 2)`` holds both, with two -inf
    columns in front (the shifted neighbours are views), and each step is one logsumexp over
    a reused ``(3, 2, N, Lp)`` stack, ~15 NumPy calls for both recursions where separate
    loops with shifted copies took ~50. Every element gets the operations of the plain
    recursions (module docstring) in the same order: the results are theirs bit for bit.
    """
    T, N, Lp = lpe.shape
    pad = np.full((T, 2, N, Lp + 2), _NEG_INF)
    both = pad[..., 2:]  # [u, 0] = alpha[u]; [u, 1] = beta[T - 1 - u] with states reversed
    lpe2 = np.stack([lpe, lpe[::-1, :, ::-1]], axis=1)  # (T, 2, N, Lp), in both's layout
    no_skip = np.stack([~skip, ~skip_next[:, ::-1]])
    steps = np.arange(T)
    live = (steps[::-1, None] < in_len[None, :])[:, :, None] & valid[None, :, ::-1]  # beta's, (T, N, Lp)
    keep = np.stack([np.broadcast_to(valid, live.shape), live], axis=1)  # (T, 2, N, Lp)
    at_end = (in_len[None, :] - 1 == steps[::-1, None])[:, :, None]  # (T, N, 1): beta's last step
    end_val = np.where(end[None, :, ::-1], lpe2[:, 1], _NEG_INF)  # (T, N, Lp)

    both[0, 0, :, 0] = lpe[0, :, 0]
    if Lp > 1:
        both[0, 0, :, 1] = np.where(tgt_len > 0, lpe[0, :, 1], _NEG_INF)
    b = np.where(at_end[0], end_val[0], np.full((N, Lp), _NEG_INF))
    np.copyto(both[0, 1], b, where=live[0])
    terms = np.empty((3, 2, N, Lp))
    with np.errstate(divide="ignore"):  # log(0) = -inf: no alignment reaches the state
        for u in range(1, T):
            prev = pad[u - 1]
            terms[0], terms[1], terms[2] = prev[..., 2:], prev[..., 1:-1], prev[..., :-2]
            np.copyto(terms[2], _NEG_INF, where=no_skip)
            r = _lse_stacked(terms) + lpe2[u]
            np.copyto(r[1], end_val[u], where=at_end[u])
            np.copyto(both[u], r, where=keep[u])
    return both[:, 0], both[::-1, 1, :, ::-1]


def _shift(a, k: int):
    """``a`` moved right by ``k`` along the last axis (``k < 0``: left), filled with -inf."""
    out = np.full_like(a, _NEG_INF)
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


class CTCLoss(Function):
    """``log_probs (T, N, C) -> (N,)`` negative log-likelihoods (reduced by the caller's
    params); see the module docstring."""

    def forward(self, log_probs, *, ext, skip, in_len, tgt_len, reduction, zero_infinity):
        xp = get_array_module(log_probs)
        to_host = hasattr(log_probs, "get")
        lp = (log_probs.get() if to_host else log_probs).astype(np.float64)  # (T, N, C)
        T, N, _ = lp.shape
        Lp = ext.shape[1]
        n_idx = np.arange(N)[:, None]
        lpe = lp[:, n_idx, ext]  # (T, N, Lp)
        states = np.arange(Lp)[None, :]
        valid = states < (2 * tgt_len + 1)[:, None]  # (N, Lp)
        last = 2 * tgt_len  # index of the final blank

        skip_next = _shift(skip.astype(np.float64), -2) == 1  # may s jump to s + 2
        end = np.zeros((N, Lp), bool)
        end[np.arange(N), last] = True
        end[np.arange(N), np.maximum(last - 1, 0)] |= tgt_len > 0
        alpha, beta = _recursions(lpe, skip, skip_next, valid, end, tgt_len, in_len)

        fin = alpha[np.maximum(in_len - 1, 0), np.arange(N)]  # (N, Lp): alpha at each sample's last step
        ll = _lse(fin[np.arange(N), last], np.where(tgt_len > 0, fin[np.arange(N), np.maximum(last - 1, 0)], _NEG_INF))
        # an empty input (torch accepts input length 0): only the empty target, with likelihood 1
        ll = np.where(in_len == 0, np.where(tgt_len == 0, 0.0, _NEG_INF), ll)
        nll = -ll  # (N,)
        self.inf = ~np.isfinite(nll)
        if zero_infinity:
            nll = np.where(self.inf, 0.0, nll)
        self.lp, self.alpha, self.beta, self.lpe = lp, alpha, beta, lpe
        self.ext, self.in_len, self.tgt_len, self.nll_raw = ext, in_len, tgt_len, -ll
        self.reduction, self.zero_infinity, self.xp, self.dtype = reduction, zero_infinity, xp, log_probs.dtype
        if reduction == "mean":
            out = np.mean(nll / np.maximum(tgt_len, 1))
        elif reduction == "sum":
            out = nll.sum()
        else:
            out = nll
        out = np.asarray(out, dtype=log_probs.dtype)
        return xp.asarray(out) if to_host else out

    def backward(self, g):
        to_host = hasattr(g, "get")
        g = np.asarray(g.get() if to_host else g, np.float64)
        lp, nll = self.lp, self.nll_raw
        T, N, C = lp.shape
        with np.errstate(invalid="ignore", over="ignore"):
            occ = np.exp(self.alpha + self.beta + nll[None, :, None] - self.lpe)  # (T, N, Lp)
        occ = np.nan_to_num(occ, nan=0.0) if self.zero_infinity else occ
        gamma = np.zeros((T, N, C))
        # add.at(gamma, (:, n, ext), occ) through one flat index (NumPy's fast loop; the same
        # sums in the same order: s ascending for each (t, n, class))
        pos = (np.arange(T)[:, None, None] * N + np.arange(N)[None, :, None]) * C + self.ext[None]
        np.add.at(gamma.reshape(-1), pos.reshape(-1), occ.reshape(-1))
        grad = np.exp(lp) - gamma
        grad[np.arange(T)[:, None] >= self.in_len[None, :]] = 0.0
        if self.zero_infinity:
            grad[:, self.inf] = 0.0
        if self.reduction == "mean":
            scale = np.broadcast_to(g / N / np.maximum(self.tgt_len, 1), (N,))
        else:
            scale = np.broadcast_to(g, (N,))
        out = (grad * scale[None, :, None]).astype(self.dtype)
        return self.xp.asarray(out) if to_host else out


def _lengths(x, n: int, name: str) -> np.ndarray:
    if isinstance(x, Tensor):
        x = x.array.get() if hasattr(x.array, "get") else x.array
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise RuntimeError(f"{name} must be integral")
    a = a.astype(np.int64).reshape(-1)
    if a.size != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return a


_WHILE = " (while checking arguments for ctc_loss_allocate_outputs)"


def _check_at_least(a: np.ndarray, low: int, name: str) -> None:
    bad = a[a < low]
    if bad.size:
        raise RuntimeError(f"Expected {name} to have value at least {low}, but got value {int(bad[0])}{_WHILE}")


@register("ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """``F.ctc_loss`` (module docstring)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction; use 'none', 'mean' or 'sum'")
    if not isinstance(log_probs, Tensor) or log_probs.array.dtype.kind not in "fV":
        raise RuntimeError("ctc_loss: log_probs must be a floating point Tensor of shape (T, N, C)")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {tuple(log_probs.shape)}")
    T, N, C = log_probs.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    tg = targets.array if isinstance(targets, Tensor) else np.asarray(targets)
    tg = np.asarray(tg.get() if hasattr(tg, "get") else tg).astype(np.int64)
    in_len = _lengths(input_lengths, N, "input_lengths")
    tgt_len = _lengths(target_lengths, N, "target_lengths")
    if unbatched:
        tg = tg.reshape(1, -1)
    # torch's checks, in its order and with its messages (ctc_loss_allocate_outputs)
    if tg.ndim not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {tg.ndim}-dimensional tensor for argument #2 "
                           f"'targets'{_WHILE}")
    if tg.ndim == 2 and tg.shape[0] != N:
        raise RuntimeError(f"Expected tensor to have size {N} at dimension 0, but got size {tg.shape[0]} for "
                           f"argument #2 'targets'{_WHILE}")
    _check_at_least(tgt_len, 0, "target_lengths")
    S = int(tgt_len.max()) if N else 0
    if tg.ndim == 1 and tg.size != tgt_len.sum():
        raise RuntimeError(f"Expected tensor to have size {int(tgt_len.sum())} at dimension 0, but got size "
                           f"{tg.size} for argument #2 'targets'{_WHILE}")
    if tg.ndim == 2 and tg.shape[1] < S:
        raise RuntimeError(f"Expected tensor to have size at least {S} at dimension 1, but got size {tg.shape[1]} "
                           f"for argument #2 'targets'{_WHILE}")
    _check_at_least(in_len, 0, "input_lengths")
    if (in_len > T).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{int(in_len[in_len > T][0])}{_WHILE}")
    if tg.ndim == 1:  # concatenated targets
        starts = np.concatenate([[0], np.cumsum(tgt_len)[:-1]])
        padded = np.full((N, max(S, 1)), blank, np.int64)
        for n in range(N):
            padded[n, :tgt_len[n]] = tg[starts[n]:starts[n] + tgt_len[n]]
        tg = padded
    Lp = 2 * S + 1
    ext = np.full((N, Lp), blank, np.int64)  # (N, Lp): b, l1, b, l2, ..., b
    if S:
        labels = tg[:, :S].copy()
        labels[np.arange(S)[None, :] >= tgt_len[:, None]] = blank
        if ((labels < 0) | (labels >= C)).any():
            raise RuntimeError(f"ctc_loss: target labels must be in [0, {C}), got {labels[(labels < 0) | (labels >= C)][:5].tolist()}")
        ext[:, 1::2] = labels
    skip = np.zeros((N, Lp), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    out = CTCLoss.apply(log_probs, ext=ext, skip=skip, in_len=in_len, tgt_len=tgt_len, reduction=reduction,
                        zero_infinity=zero_infinity)
    return out.squeeze(0) if unbatched and reduction == "none" else out
