"""Normalization ops, each one fused ``Function`` with a hand-written backward.

All of them normalise ``x`` over some axes: ``xhat = (x - mean) * rstd`` with
``rstd = 1 / sqrt(var + eps)`` (biased variance), then apply a per-feature affine
``y = xhat * weight + bias``. The shared backward, for ``gxhat = g * weight`` and ``n``
elements per group, is

    gx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat))

* ``layer_norm``: groups = the trailing ``normalized_shape`` dims; computed on a
  (rows, D) view, so ``mean(gxhat)`` and ``mean(gxhat * xhat)`` are matrix-vector products
  with ``weight``.
* ``batch_norm``: groups = channels (dim 1), reduced over batch and spatial dims. Training
  uses batch statistics and updates ``running_mean`` / ``running_var`` in place with
  ``momentum`` (running_var gets the unbiased variance ``var * n / (n - 1)``, as PyTorch);
  eval uses the running statistics (then ``y = x * scale + shift`` per channel).
* ``group_norm``: groups = (sample, channel group), the per-channel affine applied after.
* ``instance_norm``: ``group_norm`` with one group per channel (running statistics, when
  given, are updated with the batch average of the instance statistics).
* ``rms_norm``: ``y = x * rsqrt(mean(x**2) + eps) * weight``; backward
  ``gx = r * (gy0 - y0 * mean(gy0 * y0))`` with ``y0 = x * r``, ``gy0 = g * weight``.
* ``normalize``: ``y = x / max(||x||_p, eps)`` along ``dim``.

float16/bfloat16 inputs are computed in float32 and cast back. ``weight``/``bias`` may be
None.
"""

from __future__ import annotations

import math

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module
from ..kernels import cuda as _cuda_kernels
from ..kernels import layer_norm as _ln_kernels
from ._grad_graph import const
from ._util import not_a_tensor, refuse_complex, wrap_dim
from .blocked import block_slices

__all__ = ["layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "normalize"]


class _GroupsError(RuntimeError, ValueError):
    """torch raises RuntimeError for channels not divisible by num_groups; shardflow raised
    ValueError before, so both catch it."""


def _up(a):
    if a is not None and a.dtype.itemsize < 4 and a.dtype.kind in "fV":
        return a.astype(np.float32), a.dtype
    return a, None


def _down(a, dt):
    return a if dt is None or a is None else a.astype(dt)


def _f32(a, dtype):
    return None if a is None else a.astype(dtype, copy=False)


# torch's kernels named in its "not implemented for 'ComplexFloat'" errors (rms_norm has a
# complex form in torch and here)
_COMPLEX_KERNELS = {"layer_norm": "LayerNormKernelImpl", "group_norm": "GroupNormKernelImpl",
                    "batch_norm": "batch_norm", "instance_norm": "batch_norm"}


def _check_normalized_shape(ns: tuple) -> None:
    """torch's refusal of an empty ``normalized_shape`` (layer_norm, rms_norm), in its words;
    shardflow normalised over nothing and returned the input."""
    if not ns:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                           "least one element, but got normalized_shape = []")


def _check_float(x, name):
    if not isinstance(x, Tensor):
        raise not_a_tensor(f"{name}: input must be a Tensor", x)
    if name in _COMPLEX_KERNELS:
        refuse_complex(x, kernel=_COMPLEX_KERNELS[name])
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name}: expected a floating-point input, got {x.dtype}; convert it with .float()")


# ---------------------------------------------------------------------------- layer norm
class LayerNorm(Function):
    """y = (x - mean) * rstd * w + b over the trailing ``D`` elements of each row.

    Row means, variances and the backward's row/column sums are BLAS matrix-vector products
    (faster than NumPy reductions on short rows). NumPy arrays are processed in blocks of
    rows (``ops/blocked.py``: the passes over a block stay in cache); backward recomputes
    ``xhat`` from the saved input, mean and rstd per block.
    """

    save_inputs = (0, 1)

    def forward(self, x, w, b, D=1, eps=1e-5):
        self.shape = x.shape
        xa, dt = _up(x)
        x2 = xa.reshape(-1, D)  # (M, D)
        w2 = _f32(w, xa.dtype)
        w2 = None if w2 is None else w2.reshape(D)
        b2 = None if b is None else b.reshape(D).astype(xa.dtype, copy=False)
        self.fused = kernels.usable(x2, w2, b2)
        if self.fused:  # one Numba pass per row (shardflow/kernels/layer_norm.py)
            y, mu, rstd = _ln_kernels.layer_norm_forward(x2, w2, b2, eps)
        elif _cuda_kernels.usable(x2, w2, b2):  # one CuPy launch (shardflow/kernels/cuda.py)
            self.fused = "cuda"
            y, mu, rstd = _cuda_kernels.layer_norm_forward(x2, w2, b2, eps)
        else:
            y, mu, rstd = _layer_norm_rows(x2, w2, b2, eps)
        self.x2, self.mu, self.rstd, self.w2, self.D, self.dt = x2, mu, rstd, w2, D, dt
        self.eps = eps
        self.wshape = None if w is None else w.shape
        self.bshape = None if b is None else b.shape
        return _down(y.reshape(x.shape), dt)

    def backward(self, g):
        x2, mu, rstd, w2, D = self.x2, self.mu, self.rstd, self.w2, self.D
        gy_all = g.reshape(-1, D).astype(x2.dtype, copy=False)  # (M, D)
        xp = get_array_module(gy_all)
        M = gy_all.shape[0]
        need_w = w2 is not None and self.needs_input_grad[1]
        need_b = self.bshape is not None and self.needs_input_grad[2]
        need_x = self.needs_input_grad[0]
        if self.fused:
            kern = _cuda_kernels if self.fused == "cuda" else _ln_kernels
            gx, gw, gb = kern.layer_norm_backward(xp.ascontiguousarray(gy_all), x2, mu, rstd, w2, need_x)
            return (
                None if gx is None else _down(gx.reshape(self.shape), self.dt),
                _down(gw.reshape(self.wshape), self.dt) if need_w else None,
                _down(gb.reshape(self.bshape), self.dt) if need_b else None,
            )
        gw = xp.zeros(D, dtype=x2.dtype) if need_w else None
        gb = xp.zeros(D, dtype=x2.dtype) if need_b else None
        gx = xp.empty((M, D), dtype=x2.dtype) if need_x else None
        wv = w2 if w2 is not None else xp.ones(D, dtype=x2.dtype)
        for r in _row_blocks(xp, M, D):
            gy = gy_all[r]
            xhat = x2[r] - mu[r, None]
            xhat *= rstd[r, None]
            t = gy * xhat
            ones = xp.ones(gy.shape[0], dtype=gy.dtype)  # column sums as BLAS products
            if need_w:
                gw += ones @ t
            if need_b:
                gb += ones @ gy
            if need_x:
                a = gy @ wv  # D * mean(gxhat)            (rows,)
                c = t @ wv  # D * mean(gxhat * xhat)       (rows,)
                a /= D
                c /= D
                gxb = gx[r]
                if w2 is not None:
                    np.multiply(gy, wv, out=gxb)
                else:
                    gxb[...] = gy
                gxb -= a[:, None]
                np.multiply(xhat, c[:, None], out=t)
                gxb -= t
                gxb *= rstd[r, None]
        return (
            None if gx is None else _down(gx.reshape(self.shape), self.dt),
            None if gw is None else _down(gw.reshape(self.wshape), self.dt),
            None if gb is None else _down(gb.reshape(self.bshape), self.dt),
        )

    def backward_graph(self, g):
        """The backward's formula on Tensors (``_normalized_grads``), the statistics
        recomputed from the saved input so that they differentiate too."""
        D, need = self.D, self.needs_input_grad
        x = self.saved_input(0, _down(self.x2, self.dt).reshape(self.shape)).reshape(-1, D)  # (M, D)
        g2 = g.reshape(-1, D)
        w = None if self.wshape is None else self.saved_input(1, _down(self.w2, self.dt).reshape(self.wshape))
        gxhat = g2 if w is None else g2 * w.reshape(D)
        gx, xhat = _normalized_grads(x, gxhat, 1, self.eps)
        gw = (g2 * xhat).sum(dim=0).reshape(self.wshape) if w is not None and need[1] else None
        gb = g2.sum(dim=0).reshape(self.bshape) if self.bshape is not None and need[2] else None
        return gx.reshape(self.shape) if need[0] else None, gw, gb


def _normalized_grads(x, gxhat, dims, eps):
    """(gx, xhat) for ``xhat = (x - mean) * rsqrt(var + eps)`` over ``dims`` (biased
    variance) and the gradient ``gxhat`` of ``xhat``, as differentiable Tensor ops:
    ``gx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat))``."""
    xc = x - x.mean(dim=dims, keepdim=True)
    rstd = ((xc * xc).mean(dim=dims, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    gx = rstd * (gxhat - gxhat.mean(dim=dims, keepdim=True)
                 - xhat * (gxhat * xhat).mean(dim=dims, keepdim=True))
    return gx, xhat


def _row_blocks(xp, M, D):
    """Row blocks for the array-module path: cache-sized blocks on the CPU (ops/blocked.py);
    one block on a GPU, where every block costs its own kernel launches (GPT 12L d768 on an
    H200 spent 10x PyTorch's step time in blocked LayerNorm launches)."""
    return block_slices(M, D) if xp is np else [slice(0, M)]


def _layer_norm_rows(x2, w2, b2, eps):
    """(y, mean, rstd) of the rows of ``x2`` (M, D), block by block (the NumPy path)."""
    xp = get_array_module(x2)
    M, D = x2.shape
    inv = xp.full(D, 1.0 / D, dtype=x2.dtype)
    mu = xp.empty(M, dtype=x2.dtype)
    rstd = xp.empty(M, dtype=x2.dtype)
    y = xp.empty((M, D), dtype=x2.dtype)
    for r in _row_blocks(xp, M, D):
        xb, yb = x2[r], y[r]
        np.matmul(xb, inv, out=mu[r])  # row means (rows,)
        np.subtract(xb, mu[r, None], out=yb)  # xhat before scaling
        # (rows,) sums of squares: one BLAS-like pass on the CPU; CuPy's einsum costs ~0.2 ms
        # of Python per call, a product and a row sum two kernels
        var = np.einsum("ij,ij->i", yb, yb) if xp is np else (yb * yb).sum(axis=1)
        var /= D
        var += eps
        np.sqrt(var, out=var)
        np.divide(1.0, var, out=rstd[r])
        yb *= rstd[r, None]
        if w2 is not None:
            yb *= w2
        if b2 is not None:
            yb += b2
    return y, mu, rstd


@register("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then ``* weight + bias``."""
    _check_float(input, "layer_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(s) for s in normalized_shape)
    shp = tuple(input.shape)
    _check_normalized_shape(ns)
    if len(ns) > len(shp) or shp[len(shp) - len(ns):] != ns:
        raise RuntimeError(
            f"layer_norm: input shape {shp} must end with normalized_shape {ns}; pass the size(s) of "
            "the last dimension(s) of the input"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != ns:
            raise RuntimeError(f"layer_norm: {name} must have shape normalized_shape={ns}, got {tuple(p.shape)}")
    D = math.prod(ns)
    if D == 0:
        # rows of no elements: torch returns the empty result (and empty gradients); the row
        # kernels cannot reshape an empty input to (-1, 0)
        y = input * 0.0
        y = y if weight is None else y * weight
        return y if bias is None else y + bias
    return LayerNorm.apply(input, weight, bias, D=D, eps=eps)


# ---------------------------------------------------------------------------- batch norm
class BatchNorm(Function):
    save_inputs = (1,)

    def forward(self, x, w, b, rm=None, rv=None, training=False, momentum=0.1, eps=1e-5):
        self.shape = x.shape
        xa, dt = _up(x)
        N, C = xa.shape[0], xa.shape[1]
        x3 = xa.reshape(N, C, -1)  # (N, C, L)
        n = x3.shape[0] * x3.shape[2]
        fdt = xa.dtype
        w1 = None if w is None else w.astype(fdt, copy=False)
        b1 = None if b is None else b.astype(fdt, copy=False)
        self.training, self.n, self.dt = training, n, dt
        self.wshape = None if w is None else w.shape
        self.has_b = b is not None
        if training:
            mu = x3.mean(axis=(0, 2))  # (C,)
            xhat = x3 - mu[:, None]
            var = np.einsum("ncl,ncl->c", xhat, xhat) / n
            rstd = 1.0 / np.sqrt(var + eps)
            xhat *= rstd[:, None]
            if rm is not None:
                rm *= 1.0 - momentum
                rm += (momentum * mu).astype(rm.dtype, copy=False)
            if rv is not None:
                rv *= 1.0 - momentum
                rv += (momentum * var * (n / max(n - 1, 1))).astype(rv.dtype, copy=False)
            y = xhat * w1[:, None] if w1 is not None else xhat.copy()
            if b1 is not None:
                y += b1[:, None]
            self.xhat, self.rstd, self.w1, self.mu, self.eps = xhat, rstd, w1, mu, eps
            return _down(y.reshape(x.shape), dt)
        mu = rm.astype(fdt, copy=False)
        rstd = 1.0 / np.sqrt(rv.astype(fdt, copy=False) + eps)
        scale = rstd * w1 if w1 is not None else rstd
        shift = -mu * scale
        if b1 is not None:
            shift = shift + b1
        y = x3 * scale[:, None]
        y += shift[:, None]
        nig = getattr(self, "needs_input_grad", None)
        # eval: backward needs xhat only for the weight gradient (x itself is not kept)
        self.xhat = (x3 - mu[:, None]) * rstd[:, None] if (nig and w1 is not None and nig[1]) else None
        self.rstd, self.scale, self.w1, self.mu, self.eps = rstd, scale, w1, mu.copy(), eps
        return _down(y.reshape(x.shape), dt)

    def backward(self, g):
        N, C = self.shape[0], self.shape[1]
        fdt = self.rstd.dtype
        g3 = g.reshape(N, C, -1).astype(fdt, copy=False)
        gb = g3.sum(axis=(0, 2)) if (self.has_b and self.needs_input_grad[2]) or self.training else None
        gw = gx = None
        if self.training:
            xhat, rstd, w1, n = self.xhat, self.rstd, self.w1, self.n
            sgx = np.einsum("ncl,ncl->c", g3, xhat)  # sum(g * xhat) per channel
            if w1 is not None and self.needs_input_grad[1]:
                gw = sgx
            if self.needs_input_grad[0]:
                k = rstd * w1 if w1 is not None else rstd
                gx = g3 - (gb / n)[:, None]
                gx -= xhat * (sgx / n)[:, None]
                gx *= k[:, None]
        else:
            if self.xhat is not None and self.needs_input_grad[1]:
                gw = np.einsum("ncl,ncl->c", g3, self.xhat)
            if self.needs_input_grad[0]:
                gx = g3 * self.scale[:, None]
        if gx is not None:
            gx = _down(gx.reshape(self.shape), self.dt)
        if not self.has_b:
            gb = None
        return gx, _down(gw, self.dt), _down(gb, self.dt)

    def backward_graph(self, g):
        """Training: the backward's formula on Tensors, the batch statistics recomputed
        from the input (rebuilt from ``xhat``, ``rstd`` and the mean: forward keeps no copy
        of it). Eval: ``gx = g * rstd * weight`` with the running statistics constant."""
        N, C = self.shape[0], self.shape[1]
        need = self.needs_input_grad
        g3 = g.reshape(N, C, -1)  # (N, C, L)
        w = None if self.wshape is None else self.saved_input(1, _down(self.w1, self.dt))
        gx = gw = gb = None
        if self.has_b and need[2]:
            gb = g3.sum(dim=(0, 2))
        if self.training:
            xa = self.xhat / self.rstd[:, None] + self.mu[:, None]
            x3 = self.saved_input(0, _down(xa, self.dt).reshape(self.shape)).reshape(N, C, -1)
            gxhat = g3 if w is None else g3 * w.reshape(1, C, 1)
            gx, xhat = _normalized_grads(x3, gxhat, (0, 2), self.eps)
            if w is not None and need[1]:
                gw = (g3 * xhat).sum(dim=(0, 2))
        else:
            rstd = const(self.rstd.astype(g.array.dtype, copy=False).reshape(1, C, 1))
            if need[0]:
                gx = g3 * rstd if w is None else g3 * (rstd * w.reshape(1, C, 1))
            if w is not None and need[1]:
                xa = self.xhat / self.rstd[:, None] + self.mu[:, None]
                x3 = self.saved_input(0, _down(xa, self.dt).reshape(self.shape)).reshape(N, C, -1)
                mu = const(self.mu.astype(g.array.dtype, copy=False).reshape(1, C, 1))
                gw = (g3 * (x3 - mu) * rstd).sum(dim=(0, 2))
        return (None if gx is None or not need[0] else gx.reshape(self.shape)), gw, gb


@register("batch_norm")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalise each channel (dim 1) over batch and spatial dims; see the module docstring."""
    _check_float(input, "batch_norm")
    shp = tuple(input.shape)
    if len(shp) < 2:
        raise ValueError(f"batch_norm: expected input of shape (N, C, ...), got {shp}")
    C = shp[1]
    for name, p in (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var)):
        if p is not None and tuple(p.shape) != (C,):
            raise RuntimeError(f"batch_norm: {name} must have shape ({C},) (one per channel), got {tuple(p.shape)}")
    if training:
        n = math.prod(shp) // max(C, 1)
        if n <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {shp}; use a batch "
                "larger than 1 or call model.eval()"
            )
    elif running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var are required when training=False")
    rm = running_mean.array if (training and running_mean is not None) else None
    rv = running_var.array if (training and running_var is not None) else None
    if not training:
        rm, rv = running_mean.array, running_var.array
    mom = 0.0 if momentum is None else float(momentum)
    out = BatchNorm.apply(input, weight, bias, rm=rm, rv=rv, training=bool(training), momentum=mom, eps=eps)
    if training:
        for t in (running_mean, running_var):
            if t is not None:
                t._bump_version()
    return out


# ---------------------------------------------------------------------------- group norm
class GroupNorm(Function):
    save_inputs = (1,)

    def forward(self, x, w, b, G=1, eps=1e-5):
        self.shape = x.shape
        xa, dt = _up(x)
        N, C = xa.shape[0], xa.shape[1]
        xg = xa.reshape(N, G, -1)  # (N, G, C/G * L)
        m = xg.shape[2]
        mu = xg.mean(axis=2, keepdims=True)
        xhat = xg - mu
        var = np.einsum("ngk,ngk->ng", xhat, xhat) / m
        rstd = (1.0 / np.sqrt(var + eps))[:, :, None]  # (N, G, 1)
        xhat *= rstd
        xc = xhat.reshape(N, C, -1)  # (N, C, L)
        w1 = None if w is None else w.astype(xa.dtype, copy=False)
        y = xc * w1[:, None] if w1 is not None else xc.copy()
        if b is not None:
            y += b.astype(xa.dtype, copy=False)[:, None]
        self.xhat, self.rstd, self.w1, self.G, self.m, self.dt = xhat, rstd, w1, G, m, dt
        self.mu, self.eps = mu, eps
        self.has_b = b is not None
        return _down(y.reshape(x.shape), dt)

    def backward(self, g):
        N, C = self.shape[0], self.shape[1]
        xhat, rstd, w1, G, m = self.xhat, self.rstd, self.w1, self.G, self.m
        g3 = g.reshape(N, C, -1).astype(xhat.dtype, copy=False)
        gx = gw = gb = None
        if w1 is not None and self.needs_input_grad[1]:
            gw = _down(np.einsum("ncl,ncl->c", g3, xhat.reshape(N, C, -1)), self.dt)
        if self.has_b and self.needs_input_grad[2]:
            gb = _down(g3.sum(axis=(0, 2)), self.dt)
        if self.needs_input_grad[0]:
            gxh = (g3 * w1[:, None] if w1 is not None else g3).reshape(N, G, -1)
            a = gxh.mean(axis=2, keepdims=True)
            c = np.einsum("ngk,ngk->ng", gxh, xhat)[:, :, None] / m
            gx = gxh - a
            gx -= xhat * c
            gx *= rstd
            gx = _down(gx.reshape(self.shape), self.dt)
        return gx, gw, gb

    def backward_graph(self, g):
        """The backward's formula on Tensors, the group statistics recomputed from the
        input (rebuilt from ``xhat``, ``rstd`` and the mean)."""
        N, C, G = self.shape[0], self.shape[1], self.G
        need = self.needs_input_grad
        xa = _down(self.xhat / self.rstd + self.mu, self.dt).reshape(self.shape)
        x = self.saved_input(0, xa).reshape(N, G, -1)  # (N, G, C/G * L)
        g3 = g.reshape(N, C, -1)
        w = None if self.w1 is None else self.saved_input(1, _down(self.w1, self.dt))
        gxhat = (g3 if w is None else g3 * w.reshape(1, C, 1)).reshape(N, G, -1)
        gx, xhat = _normalized_grads(x, gxhat, 2, self.eps)
        gw = (g3 * xhat.reshape(N, C, -1)).sum(dim=(0, 2)) if w is not None and need[1] else None
        gb = g3.sum(dim=(0, 2)) if self.has_b and need[2] else None
        return gx.reshape(self.shape) if need[0] else None, gw, gb


@register("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each sample over groups of ``C // num_groups`` channels (and all spatial
    positions), then apply the per-channel affine."""
    _check_float(input, "group_norm")
    shp = tuple(input.shape)
    if len(shp) < 2:
        raise ValueError(f"group_norm: expected input of shape (N, C, ...), got {shp}")
    C = shp[1]
    if num_groups <= 0 or C % num_groups:
        raise _GroupsError(
            f"group_norm: num_groups={num_groups} must divide the number of channels C={C}; choose a "
            "divisor of C"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != (C,):
            raise RuntimeError(f"group_norm: {name} must have shape ({C},), got {tuple(p.shape)}")
    return GroupNorm.apply(input, weight, bias, G=int(num_groups), eps=eps)


@register("instance_norm")
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) over its spatial positions. With
    ``use_input_stats=False`` the running statistics are used (like eval batch norm)."""
    _check_float(input, "instance_norm")
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    shp = tuple(input.shape)
    if len(shp) < 3:
        raise ValueError(f"instance_norm: expected input of shape (N, C, L, ...), got {shp}")
    if running_mean is not None or running_var is not None:
        x3 = input.array.reshape(shp[0], shp[1], -1)
        L = x3.shape[2]
        if running_mean is not None:
            mu = x3.mean(axis=2).mean(axis=0)
            running_mean.array *= 1.0 - momentum
            running_mean.array += (momentum * mu).astype(running_mean.array.dtype)
            running_mean._bump_version()
        if running_var is not None:
            v = x3.var(axis=2, ddof=1 if L > 1 else 0).mean(axis=0)
            running_var.array *= 1.0 - momentum
            running_var.array += (momentum * v).astype(running_var.array.dtype)
            running_var._bump_version()
    return group_norm(input, shp[1], weight, bias, eps)


# ---------------------------------------------------------------------------- rms norm
class RMSNorm(Function):
    save_inputs = (1,)

    def forward(self, x, w, D=1, eps=1e-6):
        self.shape = x.shape
        xa, dt = _up(x)
        x2 = xa.reshape(-1, D)
        r = 1.0 / np.sqrt(np.einsum("ij,ij->i", x2, x2) / D + eps)  # (M,)
        y0 = x2 * r[:, None]
        w2 = None if w is None else w.astype(xa.dtype, copy=False).reshape(D)
        y = y0 * w2 if w2 is not None else y0.copy()
        self.y0, self.r, self.w2, self.D, self.dt, self.eps = y0, r, w2, D, dt, eps
        self.wshape = None if w is None else w.shape
        return _down(y.reshape(x.shape), dt)

    def backward(self, g):
        y0, r, w2, D = self.y0, self.r, self.w2, self.D
        gy = g.reshape(-1, D).astype(y0.dtype, copy=False)
        gx = gw = None
        if w2 is not None and self.needs_input_grad[1]:
            gw = _down(np.einsum("ij,ij->j", gy, y0).reshape(self.wshape), self.dt)
        if self.needs_input_grad[0]:
            gy0 = gy * w2 if w2 is not None else gy.copy()
            c = np.einsum("ij,ij->i", gy0, y0) / D
            gy0 -= y0 * c[:, None]
            gy0 *= r[:, None]
            gx = _down(gy0.reshape(self.shape), self.dt)
        return gx, gw

    def backward_graph(self, g):
        """The backward's formula on Tensors, ``r`` recomputed from the input (rebuilt as
        ``y0 / r``)."""
        D, need = self.D, self.needs_input_grad
        xa = _down(self.y0 / self.r[:, None], self.dt).reshape(self.shape)
        x = self.saved_input(0, xa).reshape(-1, D)  # (M, D)
        g2 = g.reshape(-1, D)
        r = ((x * x).mean(dim=1, keepdim=True) + self.eps).rsqrt()
        y0 = x * r
        w = None if self.w2 is None else self.saved_input(1, _down(self.w2, self.dt).reshape(self.wshape))
        gy0 = g2 if w is None else g2 * w.reshape(D)
        gx = r * (gy0 - y0 * (gy0 * y0).mean(dim=1, keepdim=True)) if need[0] else None
        gw = (g2 * y0).sum(dim=0).reshape(self.wshape) if w is not None and need[1] else None
        return None if gx is None else gx.reshape(self.shape), gw


@register("rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x * rsqrt(mean(x**2 over normalized_shape) + eps) * weight``; ``eps`` defaults to the
    dtype's machine epsilon (PyTorch's default). A complex input is torch's composition, whose
    ``x**2`` is the complex square (not ``|x|**2``): ``x * rsqrt(mean(x**2) + eps) * weight``."""
    cplx = isinstance(input, Tensor) and input.dtype.is_complex
    if not cplx:
        _check_float(input, "rms_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(s) for s in normalized_shape)
    shp = tuple(input.shape)
    _check_normalized_shape(ns)
    if len(ns) > len(shp) or shp[len(shp) - len(ns):] != ns:
        raise RuntimeError(f"rms_norm: input shape {shp} must end with normalized_shape {ns}")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"rms_norm: weight must have shape {ns}, got {tuple(weight.shape)}")
    if eps is None:
        eps = float(np.finfo(np.float32 if input.array.dtype.kind == "V" else input.array.dtype).eps)
    if cplx:
        dims = tuple(range(-len(ns), 0))
        out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
        return out if weight is None else out * weight
    return RMSNorm.apply(input, weight, D=math.prod(ns), eps=eps)


# ---------------------------------------------------------------------------- normalize
class Normalize(Function):
    save_inputs = (0,)

    def forward(self, x, p=2.0, dim=1, eps=1e-12):
        xa, dt = _up(x)
        if p == 2.0:
            n = np.sqrt((xa * xa).sum(axis=dim, keepdims=True))
        elif p == 1.0:
            n = np.abs(xa).sum(axis=dim, keepdims=True)
        else:
            n = (np.abs(xa) ** p).sum(axis=dim, keepdims=True) ** (1.0 / p)
        d = np.maximum(n, eps)
        self.x, self.n, self.d, self.p, self.dim, self.eps, self.dt = xa, n, d, p, dim, eps, dt
        return _down(xa / d, dt)

    def backward(self, g):
        x, n, d, p, dim = self.x, self.n, self.d, self.p, self.dim
        g = g.astype(x.dtype, copy=False)
        gx = g / d
        s = (g * x).sum(axis=dim, keepdims=True) / (d * d)  # d(out)/dd factor
        active = n > self.eps
        nz = np.where(n > 0, n, 1.0)
        if p == 2.0:
            dn = x / nz
        elif p == 1.0:
            dn = np.sign(x)
        else:
            dn = np.sign(x) * np.abs(x) ** (p - 1) / nz ** (p - 1)
        gx -= np.where(active, s, 0.0) * dn
        return _down(gx, self.dt)

    def backward_graph(self, g):
        """The backward's formula on Tensors, the norm recomputed from the input; whether
        ``eps`` binds (and ``sign(x)``) are constants."""
        xa, n, p, dim, eps = self.x, self.n, self.p, self.dim, self.eps
        x = self.saved_input(0, _down(xa, self.dt))
        if p == 2.0:
            norm = (x * x).sum(dim=dim, keepdim=True).sqrt()
        elif p == 1.0:
            norm = x.abs().sum(dim=dim, keepdim=True)
        else:
            norm = (x.abs() ** p).sum(dim=dim, keepdim=True) ** (1.0 / p)
        dt = g.array.dtype
        active = const((n > eps).astype(dt))
        d = norm * active + const(np.where(n > eps, 0.0, eps).astype(dt))  # max(norm, eps)
        nz = norm * const((n > 0).astype(dt)) + const((n <= 0).astype(dt))  # norm, 1 where 0
        if p == 2.0:
            dn = x / nz
        elif p == 1.0:
            dn = const(np.sign(xa).astype(dt))
        else:
            dn = const(np.sign(xa).astype(dt)) * x.abs() ** (p - 1.0) / nz ** (p - 1.0)
        return g / d - active * ((g * x).sum(dim=dim, keepdim=True) / (d * d)) * dn


@register("normalize")
def normalize(input, p=2.0, dim=1, eps=1e-12):
    """``input / max(||input||_p, eps)`` along ``dim`` (F.normalize; ``out=`` is the
    dispatcher's, ``out_arg.py``). A complex input is torch's composition,
    ``input / vector_norm(input).clamp_min(eps)`` (the norm of the moduli)."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        from .reduce import vector_norm

        return input / vector_norm(input, p, dim, keepdim=True).clamp_min(eps)
    _check_float(input, "normalize")
    if not (0 < float(p) < math.inf):
        raise ValueError(f"normalize: p must be a positive finite number, got {p}")
    nd = input.array.ndim
    axis = wrap_dim(dim, nd) if nd else None
    return Normalize.apply(input, p=float(p), dim=axis, eps=eps)
