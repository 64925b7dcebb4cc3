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
torch's stream (``backend/random_stream.py``). float16/bfloat16 are computed in float32;
without dropout in the order of PyTorch's CPU flash kernel (the weights rounded to the input
dtype before the product with v, the rows divided by their sums after it).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import device_of, get_array_module, to_device
from ..backend import random as _random
from ..backend import random_stream as _stream
from ..backends import cuda as _sdp_switches
from ..kernels import softmax as _sm_kernels
from ._grad_graph import const, sum_to
from ._util import flush_subnormal_, unbroadcast
from .blocked import BLOCK_ELEMENTS

__all__ = ["scaled_dot_product_attention"]

# Blocked path (ScaledDotProductAttention._forward_blocked): score elements per head block
# (GPT-mini: 16 heads of 128 x 128; 4 heads per block took 11% longer, one kernel call costs
# about 70 us), and multiply-adds per GEMM, up to which OpenBLAS stays on the calling thread.
_HEAD_BLOCK = 4 * BLOCK_ELEMENTS
_GEMM_MNK = 1 << 18


def _up(a):
    if a.dtype.itemsize < 4 and a.dtype.kind in "fV":
        return a.astype(np.float32), a.dtype
    return a, None



def _row_dot(a, b):
    """``sum(a * b, -1)`` with the last dim kept (softmax's backward). NumPy's ``einsum`` makes
    no temporary; CuPy's ``einsum`` spent 2.5 ms of Python per call on a GPT-mini step (a third
    of its cProfile on an H200), where a product and a sum are two kernels."""
    if isinstance(a, np.ndarray):
        return np.einsum("...i,...i->...", a, b)[..., None]
    return (a * b).sum(axis=-1, keepdims=True)


def _laid_out(O, order):
    """``O`` (B, H, L, Ev) laid out in memory in the dim ``order`` (outermost first; the
    last dim innermost): torch's CPU flash kernel gives its output the query's layout, and
    programs rely on it: the SDPA tutorial's CausalSelfAttention does
    ``y.transpose(1, 2).view(B, L, H * Ev)`` with no ``contiguous()``."""
    if order is None:
        return O
    out = get_array_module(O).empty(tuple(O.shape[d] for d in order) + O.shape[3:], dtype=O.dtype)
    out = out.transpose(tuple(order.index(d) for d in range(3)) + (3,))
    out[...] = O
    return out


def _query_layout(query, dropout_p):
    """The dim order torch's CPU SDPA lays its output out in (``_laid_out``), or None for a
    contiguous output: its flash kernel runs (enabled, no dropout), the query is 4-D with a
    unit last stride, and its first three dims are not in contiguous order -- then the
    output follows the query's order by stride (a ``view(B, L, H, E).transpose(1, 2)`` of a
    projection gives a (B, L, H, Ev)-laid-out output). The math kernel's output is
    contiguous; on CUDA each kernel has its own rule and the output is contiguous here."""
    qa = query.array
    if type(qa) is not np.ndarray or qa.ndim != 4 or dropout_p > 0 or not _sdp_switches.flash_sdp_enabled():
        return None
    if qa.strides[3] != qa.itemsize:
        return None
    dims = [d for d in range(3) if qa.shape[d] > 1]  # a size-1 dim's stride says nothing
    order = sorted(dims, key=lambda d: -qa.strides[d])
    if order == dims:
        return None
    it = iter(order)
    return tuple(next(it) if qa.shape[d] > 1 else d for d in range(3))


class ScaledDotProductAttention(Function):
    save_inputs = (0, 1, 2)

    def forward(self, q, k, v, mask, scale=1.0, is_causal=False, dropout_p=0.0, rep=1, layout=None):
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
        self.blocked = (mask is None and dropout_p == 0.0 and type(qa) is np.ndarray and dt is None
                        and qa.shape[:-2] == ka.shape[:-2] == va.shape[:-2])
        if self.blocked:
            self.qa, self.ka, self.va, self.scale, self.rep, self.dt = qa, ka, va, scale, rep, dt
            self.mask_shape = None
            O = self._forward_blocked(qa, ka, va, scale, is_causal)
            return _laid_out(O if dt is None else O.astype(dt), layout)
        xp = get_array_module(qa)
        A = np.matmul(qa, ka.swapaxes(-1, -2))  # (..., L, S)
        A *= scale
        L, S = A.shape[-2], A.shape[-1]
        float_mask = mask is not None and mask.dtype.kind != "b"
        self.mask_shape = None if not float_mask else mask.shape
        self.mask, self.is_causal = mask, is_causal  # references, for backward_graph
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
        O = None
        if dt is not None and dropout_p == 0.0:
            # float16/bfloat16 in PyTorch's CPU (flash) kernel: the weights exp(A - m) are
            # rounded to the input dtype for the product with v, accumulated in float32, and
            # the rows scaled by 1/sum (of the unrounded weights) at the end, rounded once.
            # Normalising first in float32 (the math path's order) differed from PyTorch in
            # a quarter of the outputs by a half-precision unit; this order gives its bits
            # for rows of up to 32 keys and fewer differences beyond (its summation order).
            O = np.matmul(A.astype(dt).astype(fdt), va)
            O *= fdt.type(1) / s
        A /= s
        P = flush_subnormal_(A)  # (..., L, S); subnormal weights would slow P @ v 10-100x
        D = None
        if dropout_p > 0.0:
            if dropout_p >= 1.0:
                D = xp.zeros((), dtype=fdt)
            else:
                # torch's math path: dropout(attn): bernoulli_(1 - p) on its stream, / (1 - p)
                keepd = _stream.bernoulli(_random.get(), P.size, 1.0 - dropout_p).reshape(P.shape)
                if device_of(P).type != "cpu":
                    keepd = to_device(keepd, device_of(P))
                D = keepd.astype(fdt)
                D *= fdt.type(1) / fdt.type(1.0 - dropout_p)
            Pd = P * D
        else:
            Pd = P
        if O is None:
            O = np.matmul(Pd, va)  # (..., L, Ev)
        self.qa, self.ka, self.va, self.P, self.D = qa, ka, va, P, D
        self.scale, self.rep, self.dt = scale, rep, dt
        return _laid_out(O if dt is None else O.astype(dt), layout)

    # ---------------------------------------------------------------- blocked path
    # No mask tensor, no dropout, same batch dims, NumPy. The probabilities P are kept whole,
    # (N1, N2, L, S), and the work runs on a few heads at a time (``_HEAD_BLOCK`` scores) so
    # that their scores stay in cache (ops/blocked.py explains why: every full-size pass over
    # the scores is otherwise a trip to memory). Within a head block the GEMMs run on blocks
    # of R query rows (and, in the backward, R keys): causal attention skips the keys a row
    # block cannot see and the rows that cannot see a key block (T = 128 in blocks of 32:
    # 62.5% of the full products),
    # and every GEMM stays within ``_GEMM_MNK`` multiply-adds, which OpenBLAS runs on the
    # calling thread (larger ones it splits over its threads: on this 2-vCPU machine, shared,
    # GPT-mini's (64, 128) x (128, 64) products then took up to 90 ms per layer instead of 4;
    # blocks of 64 rows were as fast one-threaded but slower with OpenBLAS's threads). The
    # masked softmax kernel runs once per head block over all rows and zeroes the keys a row
    # does not see, so each GEMM reads whole row or key blocks of P without masking, and the
    # key-block GEMMs of the backward write gk, gv once (no accumulation over row blocks).
    #
    # Layout: q, k, v are used as 4-D views (N1, N2, L, E) of the caller's arrays, not copied:
    # BLAS takes a strided matrix as long as its rows are contiguous, which is the case for
    # heads split from a fused (B, T, 3C) projection (rows 3C apart). Their gradients are
    # stored in the layout of their inputs (heads split from (B, T, C): (N1, L, N2, E),
    # returned transposed), so the backward of the head split reshapes without copying. The
    # output stays C-contiguous: PyTorch's CPU kernel returns it in the query's layout, which
    # would make the caller's head merge (``y.transpose(1, 2).contiguous()``) free, but
    # ``contiguous()`` then returns its input and shardflow.compile's step plan sends such a
    # call through the autograd engine; the merge copies 2 MB per GPT-mini layer (0.2 ms).
    @staticmethod
    def _rows_per_block(L, S, E):
        """Rows (or keys) per GEMM block: the most that keep ``R * S * E`` within
        ``_GEMM_MNK``, at least 32 (E the larger head size)."""
        return max(1, min(max(L, S, 1), max(32, _GEMM_MNK // max(1, S * E))))

    @staticmethod
    def _as4(a):
        """``a`` (..., L, E) as a 4-D view (N1, N2, L, E); a copy only where the batch dims
        cannot be merged without one."""
        if a.ndim == 4:
            return a
        if a.ndim < 4:
            return a.reshape((1,) * (4 - a.ndim) + a.shape)
        return a.reshape((-1,) + a.shape[-3:])

    @staticmethod
    def _like(a4, shape, dtype):
        """A new (N1, N2, R, C) array of ``shape`` stored in ``a4``'s layout: (N1, R, N2, C)
        transposed when ``a4``'s head stride is below its row stride, else C-contiguous."""
        if abs(a4.strides[1]) < abs(a4.strides[2]) and shape[1] > 1 and shape[2] > 1:
            n1, n2, r, c = shape
            return np.empty((n1, r, n2, c), dtype).transpose(0, 2, 1, 3)
        return np.empty(shape, dtype)

    @staticmethod
    def _head_blocks(n1, n2, item):
        """(dim-0 slice, dim-1 slice) blocks of about ``_HEAD_BLOCK`` score elements: several
        whole dim-0 entries when one holds fewer, else a few heads of one entry at a time."""
        if n1 == 0 or n2 == 0:  # an empty batch or no heads (a shard of 0 heads): no block
            return []
        per = max(1, _HEAD_BLOCK // max(1, item))  # heads per block
        if n2 <= per:
            return [(slice(i, min(n1, i + per // n2)), slice(None)) for i in range(0, n1, per // n2)]
        return [(slice(i, i + 1), slice(j, min(n2, j + per))) for i in range(n1) for j in range(0, n2, per)]

    def _forward_blocked(self, qa, ka, va, scale, is_causal):
        batch, L, (S, Ev) = qa.shape[:-2], qa.shape[-2], va.shape[-2:]
        q4, k4, v4 = self._as4(qa), self._as4(ka), self._as4(va)
        self.q4, self.k4, self.v4, self.is_causal = q4, k4, v4, is_causal
        n1, n2 = q4.shape[:2]
        O = np.empty((n1, n2, L, Ev), qa.dtype)  # C-contiguous (see the layout note above)
        R = self.R = self._rows_per_block(L, S, max(q4.shape[-1], Ev))
        rows = [(r0, min(L, r0 + R), min(S, r0 + R) if is_causal else S) for r0 in range(0, L, R)]
        P = self.P = np.empty((n1, n2, L, S), dtype=qa.dtype)
        # the kernels see only P (ours, C-contiguous); q, k, v go to BLAS as views
        fused = self.fused = kernels.usable(P)
        if S == 0:
            O[...] = 0  # rows that see no key
            return O.reshape(batch + (L, Ev))
        if not fused:
            tiny = np.finfo(qa.dtype).tiny
            hidden = ~np.tri(L, S, dtype=bool) if is_causal else None  # keys a row cannot see
            ones = np.ones(S, dtype=qa.dtype)
        for b, h in self._head_blocks(n1, n2, L * S):
            Ph, qh, kh, vh, Oh = P[b, h], q4[b, h], k4[b, h], v4[b, h], O[b, h]
            # the NumPy path scales q: a pass over E columns instead of the keys
            qs = qh if fused else qh * scale
            for r0, r1, kmax in rows:  # (., h, rows, keys seen by the row block)
                np.matmul(qs[:, :, r0:r1], kh[:, :, :kmax].swapaxes(-1, -2), out=Ph[:, :, r0:r1, :kmax])
            if fused:  # scale, mask (keys a row cannot see set to 0), softmax: kernels/softmax.py
                _sm_kernels.attn_softmax_(Ph, 0, is_causal, scale)
            else:
                if hidden is not None:  # also the keys the GEMMs skipped (uninitialised)
                    np.copyto(Ph, -np.inf, where=hidden)
                m = Ph.max(axis=-1, keepdims=True)
                if not np.isfinite(m).all():  # a row with every key masked -> zeros
                    m[~np.isfinite(m)] = 0.0
                Ph -= m
                np.exp(Ph, out=Ph)
                # row sums as a BLAS matrix-vector product: 6x faster than A.sum(-1) at 128
                s = (Ph.reshape(-1, S) @ ones).reshape(Ph.shape[:-1] + (1,))
                s[s == 0] = 1.0
                Ph *= 1.0 / s  # one division per row, not per score
                Ph[Ph < tiny] = 0.0  # probabilities are >= 0: flush subnormals without abs
            for r0, r1, kmax in rows:
                np.matmul(Ph[:, :, r0:r1, :kmax], vh[:, :, :kmax], out=Oh[:, :, r0:r1])
        return O.reshape(batch + (L, Ev))

    def _backward_blocked(self, g):
        qa, P, scale, R = self.qa, self.P, self.scale, self.R
        nig = self.needs_input_grad
        dtype = qa.dtype
        q4, k4, v4 = self.q4, self.k4, self.v4
        g4 = self._as4(g if type(g) is np.ndarray and g.dtype == dtype else np.asarray(g, dtype=dtype))
        n1, n2, L, S = P.shape
        causal = self.is_causal
        gq = self._like(q4, q4.shape, dtype) if nig[0] else None
        gk = self._like(k4, k4.shape, dtype) if nig[1] else None
        gv = self._like(v4, v4.shape, dtype) if nig[2] else None
        # row blocks (first row, end row, keys seen); key blocks (first key, end key, first
        # row that sees them): causal rows see keys <= row (top-left)
        rows = [(r0, min(L, r0 + R), min(S, r0 + R) if causal else S) for r0 in range(0, L, R)]
        keys = [(k0, min(S, k0 + R), k0 if causal else 0) for k0 in range(0, S, R)]
        if S == 0 or L == 0 or n1 == 0 or n2 == 0:
            for ga in (gq, gk, gv):
                if ga is not None:
                    ga[...] = 0
            return self._grads(gq, gk, gv)
        for ga in (gk, gv):  # keys no row sees (causal, S > L)
            if ga is not None and causal and S > L:
                ga[:, :, L:] = 0
        keys = [kb for kb in keys if kb[2] < L]
        blocks = self._head_blocks(n1, n2, L * S)
        hidden = ~np.tri(L, S, dtype=bool) if causal and not self.fused else None  # keys a row cannot see
        gP = None  # one head block's score gradients, reused by every block
        if gq is not None or gk is not None:
            b, h = blocks[0]
            gP = np.empty(P[b, h].shape, dtype)
        for b, h in blocks:
            Ph, gh = P[b, h], g4[b, h]
            if gv is not None:  # gv = P^T gO, by key block over the rows that see it
                gvh = gv[b, h]
                for k0, k1, rmin in keys:
                    np.matmul(Ph[:, :, rmin:, k0:k1].swapaxes(-1, -2), gh[:, :, rmin:], out=gvh[:, :, k0:k1])
            if gP is None:
                continue
            vh = v4[b, h]
            G = gP[:vh.shape[0], :vh.shape[1]]  # C-contiguous: a shorter block is 1 x heads or whole rows
            for r0, r1, kmax in rows:  # gP = gO v^T on the keys each row block sees
                np.matmul(gh[:, :, r0:r1], vh[:, :, :kmax].swapaxes(-1, -2), out=G[:, :, r0:r1, :kmax])
            if self.fused:  # gP = scale P (gP - sum(gP P)), one Numba pass per row
                _sm_kernels.attn_softmax_backward_(G, Ph, 0, causal, scale)
                qh = q4[b, h]
            else:
                if hidden is not None:  # P is 0 there; the GEMMs skipped some (uninitialised)
                    np.copyto(G, 0, where=hidden)
                G -= _row_dot(G, Ph)
                G *= Ph  # d loss / d (scaled scores)
                flush_subnormal_(G)
                qh = q4[b, h] * scale
            if gq is not None:
                gqh = gq[b, h]
                for r0, r1, kmax in rows:
                    gqc = gqh[:, :, r0:r1]
                    np.matmul(G[:, :, r0:r1, :kmax], k4[b, h][:, :, :kmax], out=gqc)
                    if not self.fused:
                        gqc *= scale  # on (h, rows, E), cheaper than on the scores
            if gk is not None:
                gkh = gk[b, h]
                for k0, k1, rmin in keys:
                    np.matmul(G[:, :, rmin:, k0:k1].swapaxes(-1, -2), qh[:, :, rmin:], out=gkh[:, :, k0:k1])
        return self._grads(gq, gk, gv)

    def _grads(self, gq, gk, gv):
        sq, sk, sv = self.shapes
        out = []
        for ga, a, shape, is_kv in ((gq, self.qa, sq, False), (gk, self.ka, sk, True), (gv, self.va, sv, True)):
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
            gP -= _row_dot(gP, P)
            gP *= P  # gA (w.r.t. the masked, scaled scores)
            if len(nig) > 3 and nig[3] and self.mask_shape is not None:
                gm = self._cast(unbroadcast(gP, self.mask_shape))
                if gm is gP:  # a mask of the scores' shape: not scaled in place below
                    gm = gP.copy()
            gP *= scale
            flush_subnormal_(gP)
            if nig[0]:
                gq = self._cast(unbroadcast(np.matmul(gP, ka), sq))
            if nig[1]:
                gk = self._reduce_kv(np.matmul(gP.swapaxes(-1, -2), qa), sk)
        return gq, gk, gv, gm

    def backward_graph(self, g):
        """The backward's formulas on Tensors, the probabilities recomputed from q and k
        (``softmax(q k^T scale + bias)``, the causal / bool mask a constant ``-inf`` bias,
        a float mask the input it is; rows that see no key stay 0), the dropout mask
        constant. Key and value heads are repeated for GQA and their gradients summed back
        over the repeats."""
        nig = self.needs_input_grad
        sq, sk, sv = self.shapes
        rep, scale = self.rep, self.scale
        q = self.saved_input(0, self._cast(self.qa))
        k = self.saved_input(1, self._cast(self.ka[..., ::rep, :, :] if rep > 1 else self.ka))
        v = self.saved_input(2, self._cast(self.va[..., ::rep, :, :] if rep > 1 else self.va))
        if rep > 1:
            k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
        P = self.P.reshape(self.qa.shape[:-2] + self.P.shape[-2:]) if self.blocked else self.P
        L, S = P.shape[-2:]
        xp = get_array_module(P)
        A = q.matmul(k.transpose(-1, -2)) * scale  # (..., L, S)
        mask = None if self.blocked else self.mask
        keep = xp.tri(L, S, dtype=bool) if self.is_causal else None
        if mask is not None and mask.dtype.kind == "b":
            keep = mask if keep is None else mask & keep
        elif mask is not None:
            A = A + self.saved_input(3, mask)
        alive = P.sum(axis=-1, keepdims=True) > 0  # rows that see a key (else all-zero P)
        if keep is not None:
            bias = xp.where(keep, 0.0, -np.inf)
            if not alive.all():
                bias = xp.where(alive, bias, 0.0)  # finite scores in rows zeroed below
            A = A + const(bias.astype(g.array.dtype))
        p = A.softmax(dim=-1)
        if not alive.all():
            p = p * const(alive.astype(g.array.dtype))
        D = None if self.blocked else self.D
        gq = gk = gv = gm = None
        if nig[2]:
            pd = p if D is None else p * const(D.astype(g.array.dtype, copy=False))
            gv = self._sum_kv(pd.transpose(-1, -2).matmul(g), sv)
        if nig[0] or nig[1] or (len(nig) > 3 and nig[3]):
            gp = g.matmul(v.transpose(-1, -2))
            if D is not None:
                gp = gp * const(D.astype(g.array.dtype, copy=False))
            ga = p * (gp - (gp * p).sum(dim=-1, keepdim=True))  # w.r.t. the masked scores
            if len(nig) > 3 and nig[3] and self.mask_shape is not None:
                gm = sum_to(ga, self.mask_shape)
            if nig[0]:
                gq = sum_to(ga.matmul(k) * scale, sq)
            if nig[1]:
                gk = self._sum_kv(ga.transpose(-1, -2).matmul(q) * scale, sk)
        return gq, gk, gv, gm

    def _sum_kv(self, ga, shape):
        """``_reduce_kv`` on Tensors: summed over the query heads sharing a kv head (GQA),
        then over the broadcast batch dims."""
        if self.rep > 1:
            s = tuple(ga.shape)
            ga = ga.reshape(s[:-3] + (s[-3] // self.rep, self.rep) + s[-2:]).sum(dim=-3)
        return sum_to(ga, shape)

    def _cast(self, a):
        return a if self.dt is None else a.astype(self.dt)

    def _reduce_kv(self, ga, shape):
        if self.rep > 1:  # sum the gradient over the query heads sharing one kv head
            s = ga.shape
            ga = ga.reshape(s[:-3] + (s[-3] // self.rep, self.rep) + s[-2:]).sum(axis=-3)
        return self._cast(unbroadcast(ga, shape))


_NO_BACKEND = ("No viable backend for scaled_dot_product_attention was found. This is likely due to turning off "
               "both the math kernel and the fused kernels.")


def _check_backends(query, dropout_p) -> None:
    """PyTorch's kernel choice, as far as it decides whether there is one: the switches of
    ``backends.cuda`` (``nn.attention.sdpa_kernel`` sets them). On a CPU torch has the math
    and the flash kernel, and CPU flash refuses dropout; on CUDA every kernel is there. The
    other conditions of torch's fused kernels (shapes, dtypes, masks) are not modelled: the
    result is the same whichever kernel would run."""
    math = _sdp_switches.math_sdp_enabled()
    flash = _sdp_switches.flash_sdp_enabled()
    if device_of(query.array).type != "cpu":
        if not (math or flash or _sdp_switches.mem_efficient_sdp_enabled() or _sdp_switches.cudnn_sdp_enabled()):
            raise RuntimeError(_NO_BACKEND)
        return
    if not (math or flash):
        raise RuntimeError(_NO_BACKEND)
    if not math and dropout_p > 0:
        warnings.warn("Both fused kernels do not support non-zero dropout.", stacklevel=3)
        raise RuntimeError("No available kernel.  Aborting execution. (the CPU flash kernel does not support "
                           "dropout_p > 0: allow SDPBackend.MATH in sdpa_kernel, or pass dropout_p=0)")


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
    _check_backends(query, dropout_p)
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
                                           dropout_p=float(dropout_p), rep=rep,
                                           layout=_query_layout(query, dropout_p))
