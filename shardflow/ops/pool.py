"""Pooling: ``max_pool{1,2,3}d``, ``avg_pool{1,2,3}d``, ``adaptive_avg_pool{1,2,3}d``,
``adaptive_max_pool{1,2,3}d``, channels-first like PyTorch, batched or unbatched.

Algorithms (one fused ``Function`` each, any number of spatial dims):

* max / avg pooling loop over the *kernel positions* (``kh * kw`` iterations, never over
  pixels): position k is a strided slice of the padded input covering every output at once.
  Max keeps a running maximum and the kernel position of the first (strict ``>``, PyTorch's
  order) maximum; backward scatters the gradient back with one masked strided addition per
  kernel position. ``max_pool2d`` with 2x2 windows and stride 2 (no padding or dilation,
  whole windows) on float32/float64 takes one-pass Numba kernels instead (``kernels/pool.py``:
  forward writes the maximum and a 1-byte window position, backward writes each gradient row
  once; the same semantics, bit-identical). Avg sums the slices and divides by PyTorch's divisor (``count_include_pad``,
  ``ceil_mode`` windows that stop at ``input + padding``, ``divisor_override``), as PyTorch's
  CPU kernel does, so the results are its bits: the window summed in order (float16 and
  bfloat16 in float32, rounded once at the end), a division (a product with ``1/div`` was an
  ulp off for divisors that are not powers of two), and the backward's shares added in output
  order. Found by CLIP's anti-aliasing ``AvgPool2d`` in float16 (a third of the outputs an
  ulp off, the float16 sum rounded per addition).
* adaptive average pooling is separable: along each spatial dim it is a matrix ``P`` of
  shape (out, in) holding ``1/len`` over bin ``[floor(i*in/out), ceil((i+1)*in/out))``; the
  forward applies ``P`` per dim with a GEMM and the backward applies ``P^T``. An input
  holding NaN or inf takes per-bin means instead (``0 * nan`` in the GEMM would reach
  every bin of the row).
* adaptive max pooling loops over the output positions (few, e.g. 7x7) taking the max over
  each bin; backward adds the gradient at the arg-max indices with one ``bincount``.

NaN: the pooled value propagates NaN like PyTorch (``np.maximum``); the reported index of a
window containing NaN may differ from PyTorch's.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend.meta import MetaArray, is_meta_array
from ..backend.xp import get_array_module
from ..kernels import pool as _pool_kernels
from ._grad_graph import linear_adjoint
from ._util import not_a_tensor, refuse_complex
from ._util import ntuple as _tuple

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
]


def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size (``pooling_output_shape``)."""
    num = size + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1  # the last window must start inside the input or the left padding
    return o


def _geometry(spatial, ksize, stride, padding, dilation, ceil_mode, name):
    osize, pads = [], []
    for size, k, s, p, d in zip(spatial, ksize, stride, padding, dilation):
        if p * 2 > k:
            raise RuntimeError(
                f"{name}: padding should be at most half of the kernel size, got padding={padding} "
                f"and kernel_size={ksize}"
            )
        o = _pool_out(size, k, s, p, d, ceil_mode)
        if o <= 0:
            raise RuntimeError(
                f"{name}: input spatial size {tuple(spatial)} is too small for kernel_size={ksize}, "
                f"dilation={dilation}, padding={padding} (output size would be {o})"
            )
        osize.append(o)
        hi = max(p, (o - 1) * s + d * (k - 1) + 1 - size - p)  # ceil_mode may need more
        pads.append((p, hi))
    return tuple(osize), tuple(pads)


def _pad(x, pads, value):
    if not any(lo or hi for lo, hi in pads):
        return x
    nsp = len(pads)
    shape = x.shape[:-nsp] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[-nsp:], pads))
    padded = get_array_module(x).full(shape, value, dtype=x.dtype)
    padded[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[-nsp:], pads))] = x
    return padded


def _crop(xp, pads, spatial):
    if not any(lo or hi for lo, hi in pads):
        return xp
    return xp[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, pads))]


def _slices(ksize, stride, dilation, osize):
    """For every kernel position: the strided slice of the padded input it touches."""
    out = []
    for pos in itertools.product(*(range(k) for k in ksize)):
        out.append((Ellipsis,) + tuple(
            slice(p * d, p * d + s * (o - 1) + 1, s) for p, d, s, o in zip(pos, dilation, stride, osize)
        ))
    return out


def _lowest(dtype):
    return -np.inf if dtype.kind in "fV" else np.iinfo(dtype).min  # V: bfloat16 (ml_dtypes)


# --------------------------------------------------------------------------- max pool
class MaxPoolNd(Function):
    save_inputs = ()

    def forward(self, x, *, d, ksize, stride, padding, dilation, ceil_mode, return_indices, name):
        spatial = x.shape[-d:]
        osize, pads = _geometry(spatial, ksize, stride, padding, dilation, ceil_mode, name)
        if is_meta_array(x):  # the meta device: shapes only (backend/meta.py)
            best = MetaArray(x.shape[:-d] + osize, x.dtype)
            return (best, MetaArray(best.shape, np.int64)) if return_indices else best
        self.fused = (
            d == 2 and tuple(ksize) == (2, 2) and tuple(stride) == (2, 2) and not any(padding)
            and all(dl == 1 for dl in dilation)
            and all(o * k <= n for o, k, n in zip(osize, ksize, spatial))  # whole windows only
            and kernels.usable(x)
        )
        if self.fused:  # 2x2 windows, stride 2: one-pass kernels (kernels/pool.py)
            best, kidx = _pool_kernels.max_pool2d_2x2_forward(x)
            self.kidx, self.xshape = kidx, x.shape
            if not return_indices:
                return best
            kidx = kidx.reshape(best.shape)
            return best, self._flat_indices(kidx, d, ksize, stride, padding, dilation, osize, spatial)
        xp = get_array_module(x)
        xpad = _pad(x, pads, _lowest(x.dtype))
        sls = _slices(ksize, stride, dilation, osize)
        best = xpad[sls[0]].copy()  # (..., *osize)
        kidx = xp.zeros(best.shape, dtype=np.int32 if len(sls) > 127 else np.int8)
        gt = xp.empty(best.shape, dtype=bool)
        step = xp.empty_like(kidx)
        for k in range(1, len(sls)):
            v = xpad[sls[k]]
            np.greater(v, best, out=gt)
            # kidx = where(gt, k, kidx), branch-free: a masked copy mispredicts on every
            # random comparison and measured 8x slower than these three 1-byte passes
            np.subtract(kidx.dtype.type(k), kidx, out=step)
            np.multiply(step, gt, out=step)
            kidx += step
            np.maximum(best, v, out=best)
        if best.dtype.kind in "fcV" and xp.isnan(best).any():
            # PyTorch moves the position on every NaN too (``val > max || isnan(val)``): a
            # window holding NaN reports its last NaN. Only inputs with NaN pay this pass.
            for k in range(len(sls)):
                kidx[xp.isnan(xpad[sls[k]])] = k
        if any(lo for lo, _ in pads):
            _first_valid_where_lowest(kidx, best, ksize, stride, dilation, pads, osize)
        self.kidx, self.pads, self.xpshape, self.spatial = kidx, pads, xpad.shape, spatial
        self.sls = sls
        # windows that never overlap (stride >= dilated kernel): backward can write each
        # slice instead of accumulating into a zeroed buffer
        self.disjoint = all(st >= dl * (k - 1) + 1 for k, st, dl in zip(ksize, stride, dilation))
        self.tiled = self.disjoint and all(
            st == k and dl == 1 and o * st == n for k, st, dl, o, n in zip(ksize, stride, dilation, osize, xpad.shape[-d:])
        )
        if not return_indices:
            return best
        return best, self._flat_indices(kidx, d, ksize, stride, padding, dilation, osize, spatial)

    @staticmethod
    def _flat_indices(kidx, d, ksize, stride, padding, dilation, osize, spatial):
        """Flat index into the (unpadded) spatial dims, as PyTorch reports it."""
        xp = get_array_module(kidx)
        kpos = xp.unravel_index(kidx, ksize)
        flat = xp.zeros(kidx.shape, dtype=np.int64)
        for i in range(d):
            shape = (1,) * (kidx.ndim - d + i) + (osize[i],) + (1,) * (d - 1 - i)
            start = (xp.arange(osize[i]) * stride[i] - padding[i]).reshape(shape)
            coord = start + kpos[i].astype(np.int64) * dilation[i]
            flat = flat * spatial[i] + coord
        return flat

    def backward(self, g, *unused):
        kidx = self.kidx
        if self.fused:
            return _pool_kernels.max_pool2d_2x2_backward(g, kidx, self.xshape)
        xp = get_array_module(g)
        # tiled windows cover every input element exactly once: no zero fill needed
        gxp = (xp.empty if self.tiled else xp.zeros)(self.xpshape, dtype=g.dtype)
        m = xp.empty(kidx.shape, dtype=bool)
        tmp = None if self.disjoint else xp.empty_like(g)
        for k, sl in enumerate(self.sls):
            np.equal(kidx, k, out=m)
            if self.disjoint:
                np.multiply(g, m, out=gxp[sl])
            else:
                np.multiply(g, m, out=tmp)
                gxp[sl] += tmp
        return _crop(gxp, self.pads, self.spatial)

    def backward_graph(self, g, *unused):
        # linear in g with the arg-max positions fixed: gather <-> scatter (_grad_graph.py)
        return linear_adjoint(self, g)

    def linear_forward(self, h):
        """``h`` (the input's shape) read at each window's arg-max: the pooling as a linear
        map with the positions saved in forward (the adjoint of ``backward``)."""
        kidx = self.kidx
        if self.fused:
            spatial, pads = self.xshape[-2:], ((0, 0), (0, 0))
            osize = (spatial[0] // 2, spatial[1] // 2)
            sls = _slices((2, 2), (2, 2), (1, 1), osize)
            kidx = kidx.reshape(self.xshape[:-2] + osize)
        else:
            pads, sls = self.pads, self.sls
        hp = _pad(h, pads, 0)
        out = get_array_module(h).zeros(kidx.shape, dtype=h.dtype)
        for k, sl in enumerate(sls):
            out += hp[sl] * (kidx == k)
        return out


def _first_valid_where_lowest(kidx, best, ksize, stride, dilation, pads, osize):
    """A window whose maximum is the padding value (every element -inf, or the integer
    minimum) kept kernel position 0, which may lie in the padding; PyTorch's kernel starts
    from the window's first in-bounds position (``while (ih0 < 0) ih0 += dilation``) and
    moves only on a strictly greater value, so it reports (and backward routes to) that one."""
    xp = get_array_module(kidx)
    low = best == _lowest(best.dtype)
    if not low.any():
        return
    d = len(ksize)
    first = xp.zeros(osize, dtype=np.int64)
    for i in range(d):
        o = xp.arange(osize[i]) * stride[i]
        j = xp.maximum(0, -((o - pads[i][0]) // dilation[i]))  # ceil((pad - o*s) / dil), at least 0
        first = first * ksize[i] + j.reshape((osize[i],) + (1,) * (d - 1 - i))
    kidx[low] = xp.broadcast_to(first, kidx.shape)[low].astype(kidx.dtype)


def _check_input(input, d, name):
    if not isinstance(input, Tensor):
        raise not_a_tensor(f"{name}: input must be a Tensor", input)
    if input.ndim not in (d + 1, d + 2):
        raise RuntimeError(
            f"{name}: expected a {d + 1}-D (unbatched) or {d + 2}-D (batched) input, got shape "
            f"{tuple(input.shape)}"
        )


def _max_pool(d, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    name = f"max_pool{d}d"
    _check_input(input, d, name)
    refuse_complex(input, kernel="max_pool1d_impl" if d == 1 else name)  # torch's kernel names
    ksize = _tuple(kernel_size, d, "kernel_size")
    stride = ksize if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _tuple(stride, d, "stride")
    if any(s == 0 for s in stride):  # torch's check (shardflow divided by it)
        raise RuntimeError(f"{name}: stride should not be zero (got stride={stride})")
    out = MaxPoolNd.apply(
        input, d=d, ksize=ksize, stride=stride, padding=_tuple(padding, d, "padding"),
        dilation=_tuple(dilation, d, "dilation"), ceil_mode=bool(ceil_mode),
        return_indices=bool(return_indices), name=name,
    )
    return out


@register("max_pool1d")
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max pooling over (N, C, L) or (C, L)."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@register("max_pool2d")
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max pooling over (N, C, H, W) or (C, H, W); ``return_indices`` gives flat H*W indices."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@register("max_pool3d")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


# --------------------------------------------------------------------------- avg pool
def _divisor(spatial, ksize, stride, padding, osize, count_include_pad, divisor_override, batch_nd):
    """PyTorch's per-window divisor, separable over dims (outer product of 1-D factors)."""
    if divisor_override is not None:
        return float(divisor_override)
    div = None
    for i, (size, k, s, p, o) in enumerate(zip(spatial, ksize, stride, padding, osize)):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        if count_include_pad:
            f = end - start
        else:
            f = np.minimum(end, size) - np.maximum(start, 0)
        shape = (o,) + (1,) * (len(spatial) - 1 - i)
        f = f.reshape(shape)
        div = f if div is None else div * f
    return div


def _acc_dtype(dtype):
    """PyTorch's accumulation type on CPU: float32 for float16/bfloat16 (kind V), else the dtype."""
    return np.dtype(np.float32) if dtype == np.float16 or dtype.kind == "V" else dtype


def _divided(acc, div, dtype=None, inplace=False):
    """``acc / div`` in ``acc``'s dtype (torch divides; a product with ``1/div`` is an ulp
    off for divisors that are not powers of two), then rounded to ``dtype``; ``inplace``
    writes into ``acc`` (a buffer of the caller's own)."""
    out = np.true_divide(acc, div.astype(acc.dtype), out=acc if inplace else None)
    return out if dtype is None or out.dtype == dtype else out.astype(dtype)


class AvgPoolNd(Function):
    save_inputs = ()

    def forward(self, x, *, d, ksize, stride, padding, ceil_mode, count_include_pad,
                divisor_override, name):
        spatial = x.shape[-d:]
        osize, pads = _geometry(spatial, ksize, stride, padding, (1,) * d, ceil_mode, name)
        if is_meta_array(x):  # the meta device: shapes only (backend/meta.py)
            return MetaArray(x.shape[:-d] + osize, x.dtype)
        xpad = _pad(x, pads, 0)
        sls = _slices(ksize, stride, (1,) * d, osize)
        div = _divisor(spatial, ksize, stride, padding, osize, count_include_pad,
                       divisor_override, x.ndim - d)
        xp = get_array_module(x)
        self.div = xp.asarray(np.asarray(div, dtype=np.float64))  # small; backward reuses it
        self.sls, self.pads, self.xpshape, self.spatial = sls, pads, xpad.shape, spatial
        return self.linear_forward(x, xpad)

    def backward(self, g):
        gs = _divided(g, self.div)
        gxp = get_array_module(g).zeros(self.xpshape, dtype=g.dtype)
        # torch adds each output's share to its window in output order: for one input
        # element that is the kernel positions from the last to the first
        for sl in reversed(self.sls):
            gxp[sl] += gs
        return _crop(gxp, self.pads, self.spatial)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear in g (_grad_graph.py)

    def linear_forward(self, h, hp=None):
        """The pooling of ``h`` (``hp``: already padded) with the geometry and divisors
        saved in forward, as PyTorch's CPU kernel: each window summed in order (float16 and
        bfloat16 in float32) and divided by its divisor, one rounding to ``h``'s dtype."""
        hp = _pad(h, self.pads, 0) if hp is None else hp
        acc = hp[self.sls[0]].astype(_acc_dtype(h.dtype))  # a copy
        for sl in self.sls[1:]:
            acc += hp[sl]
        return _divided(acc, self.div, h.dtype, inplace=True)


def _avg_pool(d, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    name = f"avg_pool{d}d"
    _check_input(input, d, name)
    refuse_complex(input, kernel="avg_pool2d" if d == 1 else name)  # (1-d runs torch's 2-d kernel)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point input, got {input.dtype}; call .float()")
    ksize = _tuple(kernel_size, d, "kernel_size")
    stride = ksize if stride is None or (not isinstance(stride, int) and len(stride) == 0) else _tuple(stride, d, "stride")
    if any(s == 0 for s in stride):  # torch's check (shardflow divided by it)
        raise RuntimeError(f"{name}: stride should not be zero (got stride={stride})")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{name}: divisor_override must be non-zero")
    spatial = tuple(input.shape[-d:])
    if d == 3 and any(n < k for n, k in zip(spatial, ksize)):  # torch checks this for 3-D only
        raise RuntimeError(f"input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) smaller than kernel "
                           f"size (kT: {ksize[0]} kH: {ksize[1]} kW: {ksize[2]}); pad the input or use a "
                           f"smaller kernel_size")
    return AvgPoolNd.apply(
        input, d=d, ksize=ksize, stride=stride, padding=_tuple(padding, d, "padding"),
        ceil_mode=bool(ceil_mode), count_include_pad=bool(count_include_pad),
        divisor_override=divisor_override, name=name,
    )


@register("avg_pool1d")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Average pooling over (N, C, L) or (C, L)."""
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


@register("avg_pool2d")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Average pooling over (N, C, H, W) or (C, H, W)."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@register("avg_pool3d")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# --------------------------------------------------------------------------- adaptive
def _bins(size, out):
    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)  # ceil((i+1)*size/out)
    return start, end


def _adaptive_out(input, output_size, d, name):
    _check_input(input, d, name)
    if isinstance(output_size, int | np.integer):
        output_size = (int(output_size),) * d
    output_size = tuple(output_size)
    if len(output_size) == 1:
        output_size = output_size * d
    if len(output_size) != d:
        raise ValueError(f"{name}: output_size must have {d} elements, got {output_size}")
    spatial = input.shape[-d:]
    osize = tuple(s if o is None else int(o) for s, o in zip(spatial, output_size))
    if any(o <= 0 for o in osize):
        raise ValueError(f"{name}: output_size must be positive, got {output_size}")
    return osize


def _pool_matrix(size, out, dtype):
    start, end = _bins(size, out)
    j = np.arange(size)
    m = (j[None, :] >= start[:, None]) & (j[None, :] < end[:, None])  # (out, in)
    return (m / (end - start)[:, None]).astype(dtype)


def _apply_along(y, mats, d):
    """Apply matrix ``mats[i]`` (out_i, in_i) along spatial dim i of ``y`` (GEMMs)."""
    for i, m in enumerate(mats):
        ax = y.ndim - d + i
        if ax == y.ndim - 1:
            y = np.matmul(y, m.T)
        elif ax == y.ndim - 2:
            y = np.matmul(m, y)
        else:
            y = np.moveaxis(np.matmul(np.moveaxis(y, ax, -1), m.T), -1, ax)
    return y


def _bin_means(y, spatial, osize, d):
    """The separable bin means by slicing (each output reads only its own bin): for inputs
    holding NaN or inf, which ``_apply_along``'s GEMMs would spread to other bins."""
    xp = get_array_module(y)
    for i, (size, out) in enumerate(zip(spatial, osize)):
        ax = y.ndim - d + i
        start, end = _bins(size, out)
        parts = [y[(slice(None),) * ax + (slice(int(a), int(b)),)].mean(axis=ax, keepdims=True)
                 for a, b in zip(start, end)]
        y = xp.concatenate(parts, axis=ax)
    return y


class AdaptiveAvgPoolNd(Function):
    save_inputs = ()

    def forward(self, x, *, d, osize):
        spatial = x.shape[-d:]
        if is_meta_array(x):  # the meta device: shapes only (backend/meta.py)
            return MetaArray(x.shape[:-d] + tuple(osize), x.dtype)
        if all(o == 1 for o in osize):  # global average pooling
            self.mats = None
            self.xshape, self.count, self.d = x.shape, int(np.prod(spatial)), d
            axes = tuple(range(x.ndim - d, x.ndim))
            # bfloat16/float16 summed and divided in float32, rounded once (torch's; the
            # 2-byte sum was off by an ulp or more in every output)
            w = x.astype(_acc_dtype(x.dtype), copy=False)
            total = np.add.reduce(w, axis=axes, keepdims=True, dtype=w.dtype) if type(w) is np.ndarray else (
                w.sum(axis=axes, keepdims=True, dtype=w.dtype))  # ufunc.reduce from here: see backend/fp_errors.py
            return (total / w.dtype.type(self.count)).astype(x.dtype, copy=False)
        # bfloat16 and float16: the weights (1/bin size) stay float32, the GEMMs run in
        # float32 and the result is rounded once (NumPy's bfloat16 matmul returns float32
        # anyway; float16 GEMMs rounded after each dimension: 42 of 72 outputs off torch's)
        wdt = _acc_dtype(x.dtype)
        xp = get_array_module(x)
        mats = [_pool_matrix(s, o, wdt) for s, o in zip(spatial, osize)]  # small, on the host
        self.mats = mats if xp is np else [xp.asarray(m) for m in mats]
        if not xp.isfinite(x).all():  # a GEMM's 0 * nan would spread NaN/inf to every bin of the row
            y = _bin_means(x.astype(wdt, copy=False), spatial, osize, d)
        else:
            y = _apply_along(x.astype(wdt, copy=False), self.mats, d)
        return xp.ascontiguousarray(y.astype(x.dtype, copy=False))

    def backward(self, g):
        xp = get_array_module(g)
        if self.mats is None:  # every input element gets grad / (number of pooled elements)
            # divided, as torch (a product with 1/count is an ulp off for most counts), in
            # float32 for the 2-byte dtypes
            w = g.astype(_acc_dtype(g.dtype), copy=False)
            return xp.broadcast_to((w / w.dtype.type(self.count)).astype(g.dtype, copy=False), self.xshape).copy()
        gx = _apply_along(g.astype(self.mats[0].dtype, copy=False), [m.T for m in self.mats], len(self.mats))
        return xp.ascontiguousarray(gx.astype(g.dtype, copy=False))

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear in g (_grad_graph.py)

    def linear_forward(self, h):
        """The pooling of ``h`` with the bin matrices saved in forward."""
        xp = get_array_module(h)
        if self.mats is None:
            axes = tuple(range(h.ndim - self.d, h.ndim))
            return h.sum(axis=axes, keepdims=True) / h.dtype.type(self.count)
        y = _apply_along(h.astype(self.mats[0].dtype, copy=False), self.mats, len(self.mats))
        return xp.ascontiguousarray(y.astype(h.dtype, copy=False))


def _adaptive_avg(d, input, output_size):
    name = f"adaptive_avg_pool{d}d"
    refuse_complex(input, kernel="adaptive_avg_pool2d" if d == 1 else name)
    osize = _adaptive_out(input, output_size, d, name)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{name}: expected a floating point input, got {input.dtype}")
    return AdaptiveAvgPoolNd.apply(input, d=d, osize=osize)


@register("adaptive_avg_pool1d")
def adaptive_avg_pool1d(input, output_size):
    """Adaptive average pooling over (N, C, L) or (C, L) to ``output_size``."""
    return _adaptive_avg(1, input, output_size)


@register("adaptive_avg_pool2d")
def adaptive_avg_pool2d(input, output_size):
    """Adaptive average pooling over (N, C, H, W) or (C, H, W); ``None`` keeps a size."""
    return _adaptive_avg(2, input, output_size)


@register("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input, output_size):
    """Adaptive average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _adaptive_avg(3, input, output_size)


def _adaptive_argmax(x, d, bins):
    """``(max, flat index)`` over each adaptive window of the last ``d`` axes of ``x``: the
    first maximum in the window's row-major order, or its last NaN (PyTorch's rule). All windows at once: each padded to the largest window's extent by
    repeating its last row / column (a repeat comes after its original in row-major order,
    so the first maximum stays the same element), gathered with one ``take`` from the
    flattened planes, one ``argmax`` over the contiguous last axis. (It was a loop over the
    output positions, each window copied and reduced: 25 rounds of small calls for 5x5.)"""
    xp = get_array_module(x)
    spatial = x.shape[x.ndim - d:]
    lead = x.shape[:x.ndim - d]
    osize = tuple(len(st) for st, _ in bins)
    flat = np.zeros((1,) * (2 * d), np.int64)  # (o_0, .., o_{d-1}, k_0, .., k_{d-1})
    for k, (st, en) in enumerate(bins):
        width = int((en - st).max())
        pos = st[:, None] + np.minimum(np.arange(width)[None, :], (en - st - 1)[:, None])
        shape = [1] * (2 * d)
        shape[k], shape[d + k] = pos.shape
        flat = flat * spatial[k] + pos.reshape(shape)
    windows = flat.reshape(int(np.prod(osize)), -1)  # (positions, window elements)
    planes = x.reshape(-1, int(np.prod(spatial)))
    gathered = xp.take(planes, xp.asarray(windows.reshape(-1)), axis=1).reshape(
        planes.shape[0], windows.shape[0], windows.shape[1])
    a = xp.argmax(gathered, axis=2)
    out = xp.take_along_axis(gathered, a[..., None], 2)[..., 0]
    if out.dtype.kind in "fcV" and xp.isnan(out).any():
        # PyTorch's kernel moves on every NaN (``val > max || isnan(val)``): the last NaN of
        # the window. A padding repeat never follows the last NaN unless it is that element.
        nan = xp.isnan(gathered)
        last = gathered.shape[2] - 1 - xp.argmax(nan[..., ::-1], axis=2)
        a = xp.where(nan.any(axis=2), last, a)
    idx = xp.asarray(windows)[xp.arange(windows.shape[0])[None, :], a]
    return out.reshape(lead + osize), idx.reshape(lead + osize).astype(np.int64, copy=False)


class AdaptiveMaxPoolNd(Function):
    save_inputs = ()

    def forward(self, x, *, d, osize, return_indices):
        spatial = x.shape[-d:]
        lead = x.shape[:-d]
        if is_meta_array(x):  # the meta device: shapes only (backend/meta.py)
            out = MetaArray(lead + tuple(osize), x.dtype)
            return (out, MetaArray(out.shape, np.int64)) if return_indices else out
        bins = [_bins(s, o) for s, o in zip(spatial, osize)]
        out, idx = _adaptive_argmax(x, d, bins)
        self.idx, self.xshape = idx, x.shape
        self.d = d
        return (out, idx) if return_indices else out

    def backward(self, g, *unused):
        d = self.d
        lead = self.xshape[:-d]
        nsp = int(np.prod(self.xshape[-d:]))
        rows = int(np.prod(lead)) if lead else 1
        xp = get_array_module(g)
        flat_idx = (self.idx.reshape(rows, -1) + (xp.arange(rows) * nsp)[:, None]).ravel()
        gx = np.bincount(flat_idx, weights=g.reshape(-1), minlength=rows * nsp)
        return gx.astype(g.dtype, copy=False).reshape(self.xshape)

    def backward_graph(self, g, *unused):
        return linear_adjoint(self, g)  # linear in g with the arg-max fixed (_grad_graph.py)

    def linear_forward(self, h):
        """``h`` (the input's shape) read at the arg-max indices saved in forward."""
        d = self.d
        lead = self.xshape[:-d]
        rows = int(np.prod(lead)) if lead else 1
        flat = h.reshape(rows, -1)
        out = np.take_along_axis(flat, self.idx.reshape(rows, -1), axis=1)
        return out.reshape(self.idx.shape)


def _adaptive_max(d, input, output_size, return_indices):
    name = f"adaptive_max_pool{d}d"
    refuse_complex(input, kernel="adaptive_max_pool2d" if d == 1 else name)
    osize = _adaptive_out(input, output_size, d, name)
    return AdaptiveMaxPoolNd.apply(input, d=d, osize=osize, return_indices=bool(return_indices))


@register("adaptive_max_pool1d")
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive max pooling over (N, C, L) or (C, L)."""
    return _adaptive_max(1, input, output_size, return_indices)


@register("adaptive_max_pool2d")
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive max pooling over (N, C, H, W) or (C, H, W); indices are flat over H*W."""
    return _adaptive_max(2, input, output_size, return_indices)


@register("adaptive_max_pool3d")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _adaptive_max(3, input, output_size, return_indices)
