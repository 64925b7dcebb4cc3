"""What one traced op costs, from its shapes alone: its family, its GEMMs, FLOPs and bytes,
forward and backward, and the bytes it keeps for backward.

Conventions (the ones ``models/_common.py`` and PyTorch's ``FlopCounterMode`` use): a
multiply-add is 2 FLOPs; attention's two products are counted in full even when causal.
A GEMM is ``(M, K, N, count)``: ``count`` products of (M, K) x (K, N).

=============  ==========================================  ====================================
family         forward                                     backward
=============  ==========================================  ====================================
``gemm``       ``linear`` (M = rows, K = in, N = out),     dX (M, N, K) when the input needs
               ``matmul``/``mm``/``bmm`` batched           grad, dW (N, M, K) when the weight
                                                           does: 2x the forward FLOPs
``attention``  ``scaled_dot_product_attention``: QK^T      4 products (dV, dP, dQ, dK): 2x
               and PV, ``2*b*L*S*(E + Ev)``; keeps P       the forward FLOPs
``conv``       implicit GEMM ``2*B*out_spatial*Cout*       2x (input and weight gradients)
               Cin/groups*kernel``
``embedding``  gathered rows (output bytes)                output bytes + a dense weight
                                                           gradient (weight bytes)
``norm``,      bytes in + out                              timed by the family's backward
``softmax``,                                               rate on the forward bytes
``elementwise``
``copy``       ``contiguous``/``cat``: 2 x output bytes    same
``shape``      views, splits, ``arange``: no bytes         per-op overhead only
=============  ==========================================  ====================================

Every op also costs the framework's per-op overhead (Python dispatch, autograd node),
which the calibration measures (``profile.overhead``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["OpCost", "op_cost", "FAMILIES", "gemm_flops"]

FAMILIES = ("gemm", "attention", "conv", "embedding", "norm", "softmax", "elementwise",
            "copy", "shape")

_GEMM = {"linear", "matmul", "mm", "bmm", "addmm", "baddbmm"}
_ATTN = {"scaled_dot_product_attention"}
_CONV = {"conv1d", "conv2d", "conv3d"}
_NORM = {"layer_norm", "batch_norm", "group_norm", "rms_norm", "instance_norm"}
_SOFTMAX = {"softmax", "log_softmax", "cross_entropy", "nll_loss"}
_EMB = {"embedding"}
_COPY = {"contiguous", "cat", "stack", "clone", "pad", "repeat"}
_SHAPE = {"view", "reshape", "transpose", "permute", "split", "chunk", "unsqueeze", "squeeze",
          "expand", "arange", "flatten", "t", "narrow", "select", "unbind", "split_with_sizes",
          "detach", "size", "view_as", "expand_as", "unflatten", "movedim", "swapaxes",
          "getitem", "__getitem__", "zeros", "ones", "empty", "full", "tensor", "zeros_like",
          "ones_like", "empty_like", "to"}


def gemm_flops(gemms) -> float:
    return float(sum(2 * m * k * n * c for m, k, n, c in gemms))


@dataclass
class OpCost:
    family: str
    name: str = ""  # the op (a profile may have a rate for it, else the family's)
    elems: float = 0.0  # elements of its largest tensor (where a measured rate is looked up)
    fwd_gemms: list = field(default_factory=list)  # [(M, K, N, count)]
    bwd_gemms: list = field(default_factory=list)
    flops: float = 0.0  # forward FLOPs
    bwd_flops: float = 0.0
    bytes: float = 0.0  # forward bytes moved
    bwd_bytes: float = 0.0  # backward bytes moved (timed with the family's backward rate)
    retain: float = 0.0  # bytes kept for backward (the basis of the activation fit)
    has_bwd: bool = True


def _n(shape) -> int:
    return int(math.prod(shape)) if shape else 1


def op_cost(rec, itemsize: int | None = None) -> OpCost:
    c = _op_cost(rec, itemsize)
    c.name = rec.name
    c.elems = float(max((_n(x) for x in [*rec.in_shapes, *rec.out_shapes]), default=0))
    return c


def _op_cost(rec, itemsize: int | None = None) -> OpCost:
    """The cost of an :class:`~.trace.OpRecord` (shapes as recorded; ``itemsize`` overrides
    the trace's bytes per element, e.g. 2 for a half-precision run)."""
    isz = itemsize or rec.itemsize
    ins, outs = rec.in_shapes, rec.out_shapes
    out_b = sum(_n(s) for s in outs) * isz
    in_b = sum(_n(s) for s in ins) * isz
    name = rec.name
    grads = rec.inputs_grad or [True] * len(ins)
    has_bwd = bool(rec.needs_grad)
    if name in _GEMM and len(ins) >= 2:
        a, b = ins[0], ins[1]
        if name == "linear":
            K, N = a[-1], b[0]
            M = _n(a[:-1])
            fwd = [(M, K, N, 1)]
            bwd = ([(M, N, K, 1)] if grads[0] else []) + ([(N, M, K, 1)] if grads[1] else [])
            extra = M * N * isz if len(ins) > 2 else 0  # bias add / bias gradient
            return OpCost("gemm", fwd_gemms=fwd, bwd_gemms=bwd, flops=gemm_flops(fwd),
                          bwd_flops=gemm_flops(bwd), bytes=in_b + out_b + extra,
                          bwd_bytes=extra + out_b, retain=out_b, has_bwd=has_bwd)
        if len(a) >= 2 and len(b) >= 2:
            M, K, N = a[-2], a[-1], b[-1]
            cnt = max(_n(a[:-2]), _n(b[:-2]))
            fwd = [(M, K, N, cnt)]
            bwd = ([(M, N, K, cnt)] if grads[0] else []) + ([(K, M, N, cnt)] if grads[1] else [])
            return OpCost("gemm", fwd_gemms=fwd, bwd_gemms=bwd, flops=gemm_flops(fwd),
                          bwd_flops=gemm_flops(bwd), bytes=in_b + out_b, bwd_bytes=out_b,
                          retain=out_b, has_bwd=has_bwd)
    if name in _ATTN and len(ins) >= 3:
        q, k, v = ins[0], ins[1], ins[2]
        L, E, S, Ev = q[-2], q[-1], k[-2], v[-1]
        cnt = _n(q[:-2])
        fwd = [(L, E, S, cnt), (L, S, Ev, cnt)]
        bwd = [(S, L, Ev, cnt), (L, Ev, S, cnt), (L, S, E, cnt), (S, L, E, cnt)]
        p_bytes = cnt * L * S * isz
        return OpCost("attention", fwd_gemms=fwd, bwd_gemms=bwd, flops=gemm_flops(fwd),
                      bwd_flops=gemm_flops(bwd), bytes=in_b + out_b + 2 * p_bytes,
                      bwd_bytes=in_b + out_b + 3 * p_bytes, retain=p_bytes + out_b, has_bwd=has_bwd)
    if name in _CONV and len(ins) >= 2 and outs:
        x, w, o = ins[0], ins[1], outs[0]
        groups = int(rec.kw.get("groups", 1) or 1)
        B, Cout = o[0], o[1]
        osp, ksz = _n(o[2:]), _n(w[2:])
        cin_g = w[1]
        M, K, N = B * osp, cin_g * ksz, Cout // groups
        fwd = [(M, K, N, groups)]
        bwd = ([(M, N, K, groups)] if grads[0] else []) + ([(N, M, K, groups)] if grads[1] else [])
        return OpCost("conv", fwd_gemms=fwd, bwd_gemms=bwd, flops=gemm_flops(fwd),
                      bwd_flops=gemm_flops(bwd), bytes=in_b + out_b, bwd_bytes=in_b + out_b,
                      retain=in_b + out_b, has_bwd=has_bwd)
    if name in _EMB and len(ins) >= 2:
        w = ins[1]
        return OpCost("embedding", flops=0.0, bytes=out_b, bwd_bytes=out_b + _n(w) * isz,
                      retain=out_b, has_bwd=has_bwd)
    if name in _NORM:
        return OpCost("norm", bytes=in_b + out_b, bwd_bytes=in_b + out_b, retain=out_b, has_bwd=has_bwd)
    if name in _SOFTMAX:
        x = _n(ins[0]) * isz if ins else out_b
        return OpCost("softmax", bytes=2 * x, bwd_bytes=2 * x, retain=x, has_bwd=has_bwd)
    if name in _COPY:
        return OpCost("copy", bytes=2 * out_b, bwd_bytes=2 * out_b, retain=out_b, has_bwd=has_bwd)
    if name in _SHAPE:
        return OpCost("shape", has_bwd=has_bwd)
    # elementwise and everything else: bytes in + out
    return OpCost("elementwise", bytes=in_b + out_b, bwd_bytes=in_b + out_b, retain=out_b,
                  has_bwd=has_bwd)
