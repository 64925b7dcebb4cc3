"""``scaled_dot_product_attention``: one fused ``Function`` (PyTorch's math backend, with a
hand-written backward).

Forward, for query (..., L, E), key (..., S, E), value (..., S, Ev):

    A = (q @ k^T) * scale                      # (..., L, S), scale = 1/sqrt(E) by default
    A += bias                                  # causal (top-left tril) / bool mask -> -inf /
                                               # float mask added
    P = softmax(A, -1)                         # rows with every key masked give 0 (PyTorch's
                                               # safe softmax), not NaN
    O = dropout(P) @ v

Backward (``D`` the scaled dropout mask, ``Pd = P * D``):

    gv = Pd^T @ gO;  gP = (gO @ v^T) * D;  gA = P * (gP - sum(gP * P, -1))
    gq = scale * gA @ k;  gk = scale * gA^T @ q;  g(float mask) = gA

Bool masks: True = take part in attention. A bool mask together with ``is_causal`` is
combined with AND (what PyTorch computes). ``enable_gqa``: key/value have ``Hq / Hkv``
times fewer heads (dim -3); head ``h`` of the query uses key/value head ``h // (Hq/Hkv)``
(``repeat_interleave``), and their gradients are summed back over the repeats. Batch
dimensions broadcast; gradients are reduced back to each input's shape. Dropout uses
``shardflow.backend.random.rng()``. float16/bfloat16 are computed in float32.
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import device_of, get_array_module, to_device
from ..backend import random as _random
from ..kernels import softmax as _sm_kernels
from ._util import flush_subnormal_, unbroadcast
from .blocked import block_slices

__all__ = ["scaled_dot_product_attention"]


def _up(a):
    if a.dtype.itemsize < 4 and a.dtype.kind in "fV":
        return a.astype(np.float32), a.dtype
    return a, None


class ScaledDotProductAttention(Function):
    save_inputs = (0, 1, 2)

    def forward(self, q, k, v, mask, scale=1.0, is_causal=False, dropout_p=0.0, rep=1):
        self.shapes = (q.shape, k.shape, v.shape)
        qa, dt = _up(q)
        ka, _ = _up(k)
        va, _ = _up(v)
        fdt = qa.dtype
        if ka.dtype != fdt:
            ka = ka.astype(fdt)
        if va.dtype != fdt:
            va = va.astype(fdt)
        if rep > 1:
            ka = np.repeat(ka, rep, axis=-3)
            va = np.repeat(va, rep, axis=-3)
        self.blocked = (mask is None and dropout_p == 0.0 and type(qa) is np.ndarray
                        and qa.shape[:-2] == ka.shape[:-2] == va.shape[:-2])
        if self.blocked:
            self.qa, self.ka, self.va, self.scale, self.rep, self.dt = qa, ka, va, scale, rep, dt
            self.mask_shape = None
            O = self._forward_blocked(qa, ka, va, scale, is_causal)
            return O if dt is None else O.astype(dt)
        xp = get_array_module(qa)
        A = np.matmul(qa, ka.swapaxes(-1, -2))  # (..., L, S)
        A *= scale
        L, S = A.shape[-2], A.shape[-1]
        float_mask = mask is not None and mask.dtype.kind != "b"
        self.mask_shape = None if not float_mask else mask.shape
        if mask is not None and not float_mask:
            keep = mask
            if is_causal:
                keep = keep & xp.tri(L, S, dtype=bool)
            A = np.where(keep, A, -np.inf).astype(fdt, copy=False)
        else:
            if is_causal:
                A += xp.where(xp.tri(L, S, dtype=bool), 0.0, -np.inf).astype(fdt)
            if float_mask:
                A = A + mask.astype(fdt, copy=False)
        m = A.max(axis=-1, keepdims=True)
        if not np.isfinite(m).all():  # fully masked rows -> zeros (safe softmax)
            m = np.where(np.isfinite(m), m, 0.0).astype(fdt, copy=False)
        A -= m
        np.exp(A, out=A)
        s = A.sum(axis=-1, keepdims=True)
        if not s.all():
            s = np.where(s == 0, 1.0, s).astype(fdt, copy=False)
        A /= s
        P = flush_subnormal_(A)  # (..., L, S); subnormal weights would slow P @ v 10-100x
        D = None
        if dropout_p > 0.0:
            if dropout_p >= 1.0:
                D = xp.zeros((), dtype=fdt)
            else:
                keepd = _random.rng().random(P.shape, dtype=np.float32) >= dropout_p
                if device_of(P).type != "cpu":
                    keepd = to_device(keepd, device_of(P))
                D = keepd.astype(fdt)
                D *= fdt.type(1.0 / (1.0 - dropout_p))
            Pd = P * D
        else:
            Pd = P
        O = np.matmul(Pd, va)  # (..., L, Ev)
        self.qa, self.ka, self.va, self.P, self.D = qa, ka, va, P, D
        self.scale, self.rep, self.dt = scale, rep, dt
        return O if dt is None else O.astype(dt)

    # ---------------------------------------------------------------- blocked path
    # No mask tensor, no dropout, same batch dims, NumPy: run the whole softmax chain on a
    # few heads at a time so that their score blocks stay in cache (ops/blocked.py explains
    # why; every full-size pass over the scores is otherwise a trip to memory). Causal
    # attention also splits the query rows in two: rows [0, L/2) only see keys [0, L/2), so
    # the top-right quarter of the scores, all masked, is never computed.
    @staticmethod
    def _row_blocks(L, S, is_causal):
        """(first row, end row, keys seen) per query-row block; top-left causal mask."""
        if not is_causal or L < 2:
            return [(0, L, S if not is_causal else min(S, L))]
        h = L // 2
        return [(0, h, min(S, h)), (h, L, min(S, L))]

    def _forward_blocked(self, qa, ka, va, scale, is_causal):
        batch, L, (S, Ev) = qa.shape[:-2], qa.shape[-2], va.shape[-2:]
        # (B*H, ., .); heads split from a fused qkv projection arrive as strided views, and
        # the reshape copies them anyway: make them contiguous once so the kernels take them
        q3, k3, v3 = (np.ascontiguousarray(a.reshape((-1,) + a.shape[-2:])) for a in (qa, ka, va))
        self.q3, self.k3, self.v3 = q3, k3, v3
        n = q3.shape[0]
        O = np.zeros((n, L, Ev), dtype=qa.dtype)  # rows that see no key (S == 0) stay 0
        tiny = np.finfo(qa.dtype).tiny
        tri = np.tri(L, S, dtype=bool) if is_causal else None
        fused = self.fused = kernels.usable(q3, k3, v3)
        blocks = []
        for r0, r1, kmax in self._row_blocks(L, S, is_causal):
            if kmax == 0 or r1 == r0:
                continue
            Pb = np.empty((n, r1 - r0, kmax), dtype=qa.dtype)  # probabilities of this block
            if not fused:  # the kernel masks and sums rows itself
                bias = None if tri is None else np.where(tri[r0:r1, :kmax], 0.0, -np.inf).astype(qa.dtype)
                ones = np.ones(kmax, dtype=qa.dtype)
            for c in block_slices(n, (r1 - r0) * kmax):
                A = Pb[c]
                # (h, rows, keys); scaling q costs a pass over E columns instead of the keys
                np.matmul(q3[c, r0:r1] * scale, k3[c, :kmax].swapaxes(-1, -2), out=A)
                if fused:  # masked softmax in one Numba pass per row (kernels/softmax.py)
                    _sm_kernels.attn_softmax_(A, r0, is_causal)
                    np.matmul(A, v3[c, :kmax], out=O[c, r0:r1])
                    continue
                if bias is not None:
                    A += bias
                m = A.max(axis=-1, keepdims=True)
                if not np.isfinite(m).all():  # a row with every key masked -> zeros
                    m[~np.isfinite(m)] = 0.0
                A -= m
                np.exp(A, out=A)
                # row sums as a BLAS matrix-vector product: 6x faster than A.sum(-1) at 128
                s = (A.reshape(-1, kmax) @ ones).reshape(A.shape[:-1] + (1,))
                s[s == 0] = 1.0
                A *= 1.0 / s  # one division per row, not per score
                A[A < tiny] = 0.0  # probabilities are >= 0: flush subnormals without abs
                np.matmul(A, v3[c, :kmax], out=O[c, r0:r1])
            blocks.append((r0, r1, kmax, Pb))
        self.P_blocks = blocks  # [(first row, end row, keys, probabilities)]
        return O.reshape(batch + (L, Ev))

    def _backward_blocked(self, g):
        qa, ka, va, blocks, scale = self.qa, self.ka, self.va, self.P_blocks, self.scale
        nig = self.needs_input_grad
        dtype = qa.dtype
        g3 = np.ascontiguousarray(g, dtype=dtype).reshape((-1,) + g.shape[-2:])
        q3, k3, v3 = self.q3, self.k3, self.v3
        n = q3.shape[0]
        gq = np.zeros(q3.shape, dtype) if nig[0] else None
        gk = np.zeros(k3.shape, dtype) if nig[1] else None
        gv = np.zeros(v3.shape, dtype) if nig[2] else None
        for r0, r1, kmax, Pb in blocks:  # key ranges overlap across blocks: gk, gv accumulate
            for c in block_slices(n, (r1 - r0) * kmax):
                Pc, gc = Pb[c], g3[c, r0:r1]
                if gv is not None:
                    gv[c, :kmax] += np.matmul(Pc.swapaxes(-1, -2), gc)  # (h, keys, Ev)
                if gq is None and gk is None:
                    continue
                gP = np.matmul(gc, v3[c, :kmax].swapaxes(-1, -2))  # (h, rows, keys)
                if self.fused:  # gP = P (gP - sum(gP P)), one Numba pass per row
                    _sm_kernels.attn_softmax_backward_(gP, Pc)
                else:
                    gP -= np.einsum("...i,...i->...", gP, Pc)[..., None]
                    gP *= Pc  # d loss / d (scaled scores)
                    flush_subnormal_(gP)
                if gq is not None:
                    gqc = gq[c, r0:r1]
                    np.matmul(gP, k3[c, :kmax], out=gqc)
                    gqc *= scale  # on (h, rows, E), cheaper than on the scores
                if gk is not None:
                    gk[c, :kmax] += np.matmul(gP.swapaxes(-1, -2), q3[c, r0:r1] * scale)
        sq, sk, sv = self.shapes
        out = []
        for ga, a, shape, is_kv in ((gq, qa, sq, False), (gk, ka, sk, True), (gv, va, sv, True)):
            if ga is None:
                out.append(None)
                continue
            ga = ga.reshape(a.shape)
            out.append(self._reduce_kv(ga, shape) if is_kv else self._cast(unbroadcast(ga, shape)))
        return out[0], out[1], out[2], None

    def backward(self, g):
        if self.blocked:
            return self._backward_blocked(g)
        qa, ka, va, P, D, scale = self.qa, self.ka, self.va, self.P, self.D, self.scale
        g = g.astype(P.dtype, copy=False)
        nig = self.needs_input_grad
        sq, sk, sv = self.shapes
        gq = gk = gv = gm = None
        if nig[2]:
            Pd = P if D is None else P * D
            gv = np.matmul(Pd.swapaxes(-1, -2), g)  # (..., S, Ev)
            gv = self._reduce_kv(gv, sv)
        if nig[0] or nig[1] or (len(nig) > 3 and nig[3]):
            gP = np.matmul(g, va.swapaxes(-1, -2))  # (..., L, S)
            if D is not None:
                gP *= D
            gP -= np.einsum("...i,...i->...", gP, P)[..., None]
            gP *= P  # gA (w.r.t. the masked, scaled scores)
            if len(nig) > 3 and nig[3] and self.mask_shape is not None:
                gm = self._cast(unbroadcast(gP, self.mask_shape))
            gP *= scale
            flush_subnormal_(gP)
            if nig[0]:
                gq = self._cast(unbroadcast(np.matmul(gP, ka), sq))
            if nig[1]:
                gk = self._reduce_kv(np.matmul(gP.swapaxes(-1, -2), qa), sk)
        return gq, gk, gv, gm

    def _cast(self, a):
        return a if self.dt is None else a.astype(self.dt)

    def _reduce_kv(self, ga, shape):
        if self.rep > 1:  # sum the gradient over the query heads sharing one kv head
            s = ga.shape
            ga = ga.reshape(s[:-3] + (s[-3] // self.rep, self.rep) + s[-2:]).sum(axis=-3)
        return self._cast(unbroadcast(ga, shape))


@register("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v`` for query (..., L, E), key (..., S, E), value
    (..., S, Ev); see the module docstring for masks, GQA and the backward."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention: {name} must be a Tensor, got {type(t).__name__}")
        if t.array.ndim < 2:
            raise ValueError(f"scaled_dot_product_attention: {name} must have shape (..., len, dim), got {tuple(t.shape)}")
    qs, ks, vs = tuple(query.shape), tuple(key.shape), tuple(value.shape)
    if qs[-1] != ks[-1]:
        raise ValueError(
            f"scaled_dot_product_attention: query and key must have the same embedding size (last dim), "
            f"got query {qs} and key {ks}"
        )
    if ks[-2] != vs[-2]:
        raise ValueError(
            f"scaled_dot_product_attention: key and value must have the same sequence length (dim -2), "
            f"got key {ks} and value {vs}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout_p must be between 0 and 1, got {dropout_p}")
    rep = 1
    if enable_gqa and len(qs) >= 3 and qs[-3] != ks[-3]:
        hq, hkv = qs[-3], ks[-3]
        if hkv == 0 or hq % hkv or vs[-3] != hkv:
            raise ValueError(
                f"scaled_dot_product_attention: with enable_gqa the query heads ({hq}) must be a multiple "
                f"of the key/value heads (key {hkv}, value {vs[-3]}), dim -3"
            )
        rep = hq // hkv
    try:
        if rep > 1:
            np.broadcast_shapes(qs[:-2], ks[:-3] + (ks[-3] * rep,), vs[:-3] + (vs[-3] * rep,))
        else:
            np.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2])
    except ValueError:
        raise ValueError(
            f"scaled_dot_product_attention: batch dims of query {qs}, key {ks} and value {vs} do not "
            "broadcast; for grouped-query attention pass enable_gqa=True"
        ) from None
    mask = attn_mask
    if mask is not None:
        if not isinstance(mask, Tensor):
            mask = Tensor(np.asarray(mask))
        ma = mask.array
        if ma.dtype.kind == "b":
            mask = ma  # bool masks take no gradient: pass the raw array
        elif ma.dtype.kind not in "fV":
            raise TypeError(
                f"scaled_dot_product_attention: attn_mask must be bool (True = attend) or float (added to "
                f"the scores), got {mask.dtype}"
            )
    sc = (1.0 / math.sqrt(qs[-1])) if scale is None else float(scale)
    return ScaledDotProductAttention.apply(query, key, value, mask, scale=sc, is_causal=bool(is_causal),
                                           dropout_p=float(dropout_p), rep=rep)
