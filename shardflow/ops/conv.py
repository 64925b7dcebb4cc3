"""Convolutions: ``conv1d``, ``conv2d``, ``conv3d`` and ``conv_transpose1d/2d/3d``,
channels-first (NCL / NCHW / NCDHW) like PyTorch.

Algorithm (one fused ``Function`` per op, hand-written backward, any number of spatial dims):

* forward: pad the input once, take an ``as_strided`` view of every kernel window laid out
  as ``(C, K..., N, O...)`` (``K...`` = kernel positions, ``O...`` = output positions) and
  copy it into a contiguous column buffer ("im2col"): a ``(C*K, N*L)`` matrix with the batch
  inside the columns. One GEMM per group ``(O/G, C/G*K) @ (C/G*K, N*L)`` (groups ride on
  the GEMM's batch dim, ``G`` is 1 for a plain conv) gives the output as ``(O, N, L)``; one
  transposing pass writes it as ``(N, O, L)`` and adds the bias.
  Why not N per-sample GEMMs ``(O, C*K) @ (C*K, L)`` (the previous lowering, whose result
  already is NCHW, no transposes): with one BLAS thread the GEMM time is about the same
  (the weight gradient's one GEMM is 10-15% faster than N GEMMs and a batch sum), but with
  OpenBLAS's threads each of the N small GEMMs pays a thread start/join, which stalls
  whenever the cores are shared: the engine's CNN step took 2-3x longer with the batched
  GEMMs at load 2-4 (339 vs 109 ms median, alternating in one process). One large GEMM
  pays it once. ``conv_transpose`` uses the same layout.
* backward: the output gradient is transposed to ``(O, N*L)`` once; ``grad_weight =
  g @ cols^T`` is one GEMM (no sum over the batch); ``grad_input = col2im(W^T @ g)``.
  Stride 1 uses the "flat" layout (``_flat_geometry``): the GEMM runs on the gradient with
  its rows padded to the padded input's row length, so col2im is one contiguous shifted
  addition per kernel position; other strides add ``kh * kw`` strided slices (never a loop
  over pixels). Either way into a zeroed padded buffer, then the padding is cropped.
* Numba kernels (``kernels/conv.py``; float32/float64, C-contiguous): the forward's
  transpose + bias; the backward's transposed gradient, bias gradient and (2-D stride 1)
  wide gradient in one pass; the 2-D stride-1 col2im one input plane at a time (in L1,
  written cropped and contiguous). The output and the input/weight gradients are the NumPy
  path's bit for bit; the bias gradient is summed in float64 (NumPy: pairwise in the dtype).
* ``conv_transpose`` is the adjoint: its forward is conv's input-gradient computation and
  its backward uses conv's forward (for the input) and the same weight GEMM.

``padding`` accepts an int, a tuple, ``'valid'`` or ``'same'`` (stride 1 only; for even
effective kernels the extra element goes on the right/bottom, as in PyTorch). bfloat16
inputs: NumPy's GEMM accumulates and returns float32; the output (bias added in float32)
and the gradients are rounded to bfloat16 once, as PyTorch returns them. float16: the
forward GEMM runs in float32 (``_gemm``), the bias is added there and the output rounded
once, as PyTorch's; the backward's GEMMs and col2im and ``conv_transpose`` too, each
gradient rounded once at the end (torch's AVX512 CPU kernels; an AVX2 torch rounds partial
sums in float16 and differs from these by an ulp in many elements).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import kernels
from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend.memory_format import (
    channels_last,
    channels_last_3d,
    in_memory_format,
    is_channels_last,
)
from ..backend.meta import MetaArray, is_meta_array
from ..backend.user_warning import first_time
from ..backend.xp import get_array_module
from ..kernels import conv as _conv_kernels
from ._grad_graph import conj as _gg_conj
from ._util import as_dtype_of
from ._util import ntuple as _tuple

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
]


def _out_size(size, k, s, d, p_lo, p_hi):
    return (size + p_lo + p_hi - d * (k - 1) - 1) // s + 1


def _pad(x, pads, value=0.0):
    """Zero-pad the trailing spatial dims of ``x``; ``pads`` = ((lo, hi), ...)."""
    if not any(lo or hi for lo, hi in pads):
        return x
    nsp = len(pads)
    shape = x.shape[:-nsp] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[-nsp:], pads))
    xp = get_array_module(x)
    padded = xp.empty(shape, dtype=x.dtype) if value != 0.0 else xp.zeros(shape, dtype=x.dtype)
    if value != 0.0:
        padded.fill(value)
    inner = (Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[-nsp:], pads))
    padded[inner] = x
    return padded


def _crop(xp, pads, shape):
    nsp = len(pads)
    if not any(lo or hi for lo, hi in pads):
        return xp
    idx = (Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(shape[-nsp:], pads))
    return xp[idx]


_USE_FLAT = True  # stride-1 input gradients use the contiguous "flat" col2im below


def _flat_geometry(pshape, ksize, dilation, osize):
    """Stride-1 "flat" geometry (used by the input gradient).

    Flattened over its spatial dims, every kernel window of the padded input is one
    contiguous run: output position (o_0, i_1, ...), with i_j ranging over the *padded*
    extent of dims 1.., starts at a flat offset, so kernel position k is a shift ``off_k``
    and its window is ``flat[off_k : off_k + Lw]`` with ``Lw = O_0 * P_0`` (``P_j`` = flat
    stride of padded dim j). Columns past the valid output width carry zero gradient and
    cost ``Wp / OW`` extra GEMM work (a few percent for 3x3 kernels), in exchange for long
    contiguous additions in col2im. Returns (offsets, Lw, slack), ``slack`` being the zeros
    needed after the buffer so that the last window stays in bounds.
    """
    d = len(ksize)
    pstr = [int(np.prod(pshape[i + 1:])) for i in range(d)]
    offs = [
        sum(pos[i] * dilation[i] * pstr[i] for i in range(d))
        for pos in itertools.product(*(range(k) for k in ksize))
    ]
    lw = osize[0] * pstr[0]
    slack = sum((ksize[i] - 1) * dilation[i] * pstr[i] for i in range(1, d))
    return offs, lw, slack


def _check_dtypes(x, w, b):
    if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype):
        raise RuntimeError(
            f"convolution: input dtype {x.dtype}, weight dtype {w.dtype}"
            + (f", bias dtype {b.dtype}" if b is not None else "")
            + " should be the same; cast them with .to(dtype)"
        )


def _as_grad(gr, g):
    """A weight/input gradient in the output gradient's dtype (bfloat16 and float16 GEMMs
    give float32)."""
    return None if gr is None else _in_dtype_of(gr, g)


def _gemm(a, b):
    """``a @ b``; float16 operands are multiplied in float32 and the float32 result is
    returned (``_in_dtype_of`` rounds it once, after the bias), as PyTorch's CPU half
    convolution does. NumPy's float16 matmul returns float16, so the bias was added to an
    already rounded sum: two roundings, a float16 ulp off torch in a third of the outputs
    (Whisper's ``Conv1d`` on a half mel spectrogram)."""
    if a.dtype == np.float16:
        return np.matmul(a.astype(np.float32), b.astype(np.float32))
    return np.matmul(a, b)


def _in_dtype_of(y, a, b=None):
    """``as_dtype_of``, and a float32 result of float16 operands (``_gemm``) back in float16."""
    if a.dtype == np.float16 and y.dtype == np.float32:
        return y.astype(np.float16)
    return as_dtype_of(y, a, b)


def _matmul_k(a, b):
    """``np.matmul(a, b)`` of stacked matrices; an inner dimension of 1 (a depthwise
    convolution's column gradient: one output channel per group) as the broadcast product it
    is. NumPy's matmul takes its unblocked loop for such outer products, 10x slower. Each
    element is the one product either way (float32/float64; half precision keeps the GEMM,
    which gives float32); C-contiguous as the GEMM's output (``a`` may be a transposed view)."""
    if a.shape[-1] == 1 and a.dtype == b.dtype and a.dtype in _FLOATS:
        return get_array_module(a).ascontiguousarray(a * b)
    return np.matmul(a, b)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _im2col_t(xpad, ksize, stride, dilation, osize):
    """Columns of the padded input ``xpad`` (N, C, *S) in the one-GEMM layout: a contiguous
    (C, *K, N, *O) buffer, i.e. (C*prod(K), N*prod(O)) with the batch inside the columns."""
    n, c = xpad.shape[:2]
    d = len(ksize)
    st = xpad.strides
    shape = (c,) + tuple(ksize) + (n,) + tuple(osize)
    strides = ((st[1],)
               + tuple(st[2 + i] * dilation[i] for i in range(d))
               + (st[0],)
               + tuple(st[2 + i] * stride[i] for i in range(d)))
    xp = get_array_module(xpad)
    if xp is np:
        view = as_strided(xpad, shape=shape, strides=strides, writeable=False)
    else:  # a device array: CuPy's own as_strided (it has no ``writeable`` flag)
        view = xp.lib.stride_tricks.as_strided(xpad, shape=shape, strides=strides)
    cols = xp.empty(view.shape, dtype=xpad.dtype)
    xp.copyto(cols, view)
    return cols


def _window_slices(pos, stride, dilation, osize) -> tuple:
    """The (N, C, *S) slices that kernel position ``pos`` reads over all output positions."""
    return (slice(None), slice(None)) + tuple(
        slice(p * dl, p * dl + st * (o - 1) + 1, st) for p, st, dl, o in zip(pos, stride, dilation, osize)
    )


def _col2im_t(gcols, xshape_padded, ksize, stride, dilation, osize):
    """Adjoint of ``_im2col_t``: add the (C, *K, N, *O) column gradient back into a zero
    padded (N, C, *S) input gradient, one strided-slice addition per kernel position."""
    n, c = xshape_padded[:2]
    g = gcols.reshape((c,) + tuple(ksize) + (n,) + tuple(osize))
    gx = get_array_module(gcols).zeros(xshape_padded, dtype=gcols.dtype)
    for pos in itertools.product(*(range(k) for k in ksize)):
        sl = _window_slices(pos, stride, dilation, osize)
        gx[sl] += g[(slice(None),) + pos].swapaxes(0, 1)
    return gx


class ConvNd(Function):
    """Fused convolution (im2col + one GEMM); see the module docstring."""

    save_inputs = (1,)  # backward reads the weight; the input is kept as its column buffer

    def forward(self, x, w, b=None, *, stride, padding, dilation, groups):
        d = w.ndim - 2
        unbatched = x.ndim == d + 1
        if unbatched:
            x = x[None]
        n, c = x.shape[:2]
        o = w.shape[0]
        ksize = w.shape[2:]
        osize = tuple(
            _out_size(x.shape[2 + i], ksize[i], stride[i], dilation[i], *padding[i]) for i in range(d)
        )
        if any(s <= 0 for s in osize):
            raise RuntimeError(
                f"convolution: the kernel {tuple(ksize)} (dilation {dilation}) is larger than the "
                f"padded input of spatial shape "
                f"{tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))}; "
                "use a smaller kernel or more padding"
            )
        if is_meta_array(x) or is_meta_array(w):
            # the meta device (backend/meta.py): the output's shape and dtype, no work (torch's
            # shape reasoning, e.g. a forward hook printing each layer's output shape)
            out = MetaArray((n, o) + osize, np.result_type(x.dtype, w.dtype))
            return out[0] if unbatched else out
        wm = w.reshape(groups, o // groups, -1)  # (G, Og, Cg*K)
        xpad = _pad(x, padding)
        pshape = xpad.shape[2:]
        # one GEMM per group: (Og, Cg*K) @ (Cg*K, N*L), then the (O, N, *O) result is
        # transposed to (N, O, *O) in the same pass that adds the bias
        cols = _im2col_t(xpad, ksize, stride, dilation, osize)  # (C, *K, N, *O)
        nl = n * int(np.prod(osize))
        ot = _gemm(wm, cols.reshape(groups, wm.shape[2], nl))  # (G, Og, N*L)
        self.fused = n > 0 and kernels.usable(ot, b)  # (an empty batch: NumPy)
        if self.fused:
            out = _conv_kernels.swap01(ot.reshape(o, n, nl // n), b).reshape((n, o) + osize)
        else:
            src = ot.reshape((o, n) + osize).swapaxes(0, 1)
            out = get_array_module(ot).empty(src.shape, dtype=ot.dtype)
            if b is not None:
                np.add(src, b.reshape((o,) + (1,) * d), out=out)
            else:
                np.copyto(out, src)
        out = _in_dtype_of(out, w, x)  # bfloat16/float16: the GEMM gave float32 (bias added in it)
        self.cols, self.w, self.has_b = cols, w, b is not None
        self.meta = (x.shape, (n, c) + pshape, padding, stride, dilation, groups, osize, unbatched)
        return out[0] if unbatched else out

    def backward(self, g):
        return self._backward(g, False)[0]

    def backward_weight_later(self, g):
        """``backward(g)`` with the weight's gradient left out and returned as a
        zero-argument callable running the same GEMM (None when not needed):
        ``((gx, None, gb), later)``. compile_step's backward runs it on a second thread
        (``jit/overlap.py``); the callable holds its own references."""
        return self._backward(g, True)

    def _backward(self, g, defer_weight):
        xshape, xpshape, padding, stride, dilation, groups, osize, unbatched = self.meta
        w, cols = self.w, self.cols
        if w.dtype.kind == "c":  # complex: the gradients take conj(other operand), as torch
            w, cols = w.conjugate(), cols.conjugate()
        d = w.ndim - 2
        if unbatched:
            g = g[None]
        n, o = g.shape[:2]
        c = xpshape[1]
        ksize = w.shape[2:]
        pshape = xpshape[2:]
        # stride 1: the column gradient is computed in the wide layout (output rows padded to
        # the padded input's row length) so that col2im is one contiguous shifted addition
        # per kernel position (see _flat_geometry)
        flat = self.needs_input_grad[0] and _USE_FLAT and all(s == 1 for s in stride)
        gtw = gb = None
        if n > 0 and kernels.usable(g):
            # gt, the bias gradient and (stride-1 2-D) the wide gtw in one pass (kernels/conv.py)
            gt, gb, gtw = _conv_kernels.grad_t(g, pshape[1] if flat and d == 2 else None)
        else:
            gt = get_array_module(g).ascontiguousarray(g.swapaxes(0, 1))
        if gt.dtype == np.float16:  # float32 GEMMs and col2im, rounded once at the end (torch's CPU)
            gt, w = gt.astype(np.float32), w.astype(np.float32)
        nl = n * int(np.prod(osize))
        gt = gt.reshape(groups, o // groups, nl)  # (G, Og, N*L)
        cols = cols.reshape(groups, cols.shape[0] // groups * int(np.prod(ksize)), nl)  # (G, Cg*K, N*L)
        gx = gw = later = None
        if self.needs_input_grad[1]:
            def later(gt=gt, cols=cols, wshape=w.shape, g=g):
                return _as_grad(np.matmul(gt, cols.transpose(0, 2, 1)).reshape(wshape), g)
            if not defer_weight:
                gw, later = later(), None
        if self.needs_input_grad[0]:
            wm = w.reshape(groups, o // groups, -1).transpose(0, 2, 1)  # (G, Cg*K, Og)
            if flat:
                offs, lw, slack = _flat_geometry(pshape, ksize, dilation, osize)
                if gtw is None:
                    gtw = get_array_module(g).zeros((o, n, osize[0]) + pshape[1:], dtype=gt.dtype)
                    gtw[(Ellipsis,) + tuple(slice(0, s) for s in osize[1:])] = gt.reshape((o, n) + osize)
                total = int(np.prod(pshape))
                if d == 2 and n > 0 and groups == c == o and kernels.usable(gtw, w):
                    # depthwise: the column gradient w[c, k] * gtw[c] formed inside col2im
                    gx = _conv_kernels.col2im_flat2d_dw(gtw, w.reshape(c, -1), offs, (n,) + xshape[1:],
                                                        total + slack, pshape[1], padding)
                    return self._grads(gx[0] if unbatched else gx, gw, gb, gt, g), later
                gcols = _matmul_k(wm, gtw.reshape(groups, o // groups, n * lw))  # (G, Cg*K, N*Lw)
                if d == 2 and n > 0 and kernels.usable(gcols):
                    # one pass per plane, result cropped and contiguous (kernels/conv.py)
                    gx = _conv_kernels.col2im_flat2d(gcols, offs, (n,) + xshape[1:], total + slack,
                                                     pshape[1], padding)
                    return self._grads(gx[0] if unbatched else gx, gw, gb, gt, g), later
                gcols = gcols.reshape(c, len(offs), n, lw)
                gbuf = get_array_module(gcols).zeros((n, c, total + slack), dtype=gcols.dtype)
                for k, off in enumerate(offs):
                    gbuf[:, :, off:off + lw] += gcols[:, k].swapaxes(0, 1)
                gxp = gbuf[:, :, :total].reshape(xpshape)
            else:
                gcols = _matmul_k(wm, gt)  # (G, Cg*K, N*L)
                gxp = _col2im_t(gcols, xpshape, ksize, stride, dilation, osize)
            gx = _crop(gxp, padding, xshape)
            if unbatched:
                gx = gx[0]
        return self._grads(gx, gw, gb, gt, g), later

    def _grads(self, gx, gw, gb, gt, g):
        """The three gradients (``gw`` already in ``g``'s dtype); ``gb``: the kernel's bias
        gradient, or None (NumPy path)."""
        if not (self.has_b and len(self.needs_input_grad) > 2 and self.needs_input_grad[2]):
            gb = None
        elif gb is None:
            gb = _as_grad(gt.reshape(gt.shape[0] * gt.shape[1], gt.shape[2]).sum(axis=1), g)  # gt: float32 for float16
        return _as_grad(gx, g), gw, gb

    def backward_graph(self, g):
        """The three gradients as convolutions, so they differentiate again: the input's is
        the transposed convolution of ``g`` with the weight, the weight's the convolution of
        the input with ``g`` (``_conv_input_grad``, ``_conv_weight_grad``). The input is
        rebuilt from the column buffer (``_uncol``; forward keeps no other copy)."""
        xshape, xpshape, padding, stride, dilation, groups, osize, unbatched = self.meta
        need = self.needs_input_grad
        w = _gg_conj(self.saved_input(1, self.w))
        g4 = g.unsqueeze(0) if unbatched else g  # (N, O, *O)
        gx = gw = gb = None
        if need[0]:
            gx = _conv_input_grad(g4, w, xshape, padding, stride, dilation, groups)
            if unbatched:
                gx = gx.squeeze(0)
        if need[1]:
            xa = _uncol(self.cols, xpshape, self.w.shape[2:], stride, dilation, osize, padding, xshape)
            x = _gg_conj(self.saved_input(0, xa[0] if unbatched else xa))
            gw = _conv_weight_grad(x.unsqueeze(0) if unbatched else x, g4, self.w.shape, padding,
                                   stride, dilation, groups)
        if not self.has_b:
            return gx, gw
        if len(need) > 2 and need[2]:
            gb = g4.sum(dim=(0,) + tuple(range(2, g4.ndim)))
        return gx, gw, gb


def _uncol(cols, xpshape, ksize, stride, dilation, osize, pads, xshape):
    """The (N, C, *S) input back from its (C, *K, N, *O) column buffer (forward keeps no
    other copy). Positions no window reads stay 0: the weight gradient never reads them."""
    n, c = xpshape[:2]
    cols = cols.reshape((c,) + tuple(ksize) + (n,) + tuple(osize))
    xpad = get_array_module(cols).zeros(xpshape, dtype=cols.dtype)
    for pos in itertools.product(*(range(k) for k in ksize)):
        sl = _window_slices(pos, stride, dilation, osize)
        xpad[sl] = cols[(slice(None),) + pos].swapaxes(0, 1)
    return _crop(xpad, pads, xshape)


def _conv_input_grad(g, w, xshape, pads, stride, dilation, groups):
    """d(conv)/d(input) of the (N, O, *O) gradient ``g`` as a differentiable transposed
    convolution of ``g`` with the weight ``w`` (O, C/G, *K), with the output padding that
    restores the input size; symmetric padding is the transposed convolution's own (its
    result contiguous, as torch's gradient: programs ``view`` it), asymmetric padding
    ('same' with an even kernel) a crop of the unpadded one."""
    d = w.ndim - 2
    ksize = w.shape[2:]
    osize = g.shape[2:]
    psize = [xshape[2 + i] + pads[i][0] + pads[i][1] for i in range(d)]
    outpad = tuple(psize[i] - ((osize[i] - 1) * stride[i] + dilation[i] * (ksize[i] - 1) + 1)
                   for i in range(d))
    symmetric = all(lo == hi for lo, hi in pads)
    full = ConvTransposeNd.apply(g, w, stride=tuple(stride),
                                 padding=tuple(lo for lo, _ in pads) if symmetric else (0,) * d,
                                 output_padding=outpad, dilation=tuple(dilation), groups=groups)
    if symmetric:
        return full  # (N, C, *S)
    return _crop_tensor(full, [lo for lo, _ in pads], xshape[2:]).contiguous()


def _conv_weight_grad(x, g, wshape, pads, stride, dilation, groups):
    """d(conv)/d(weight) = the correlation of the input ``x`` (N, C, *S) with the gradient
    ``g`` (N, O, *O), as one differentiable convolution: the batch becomes the channels
    (input (C/G, G*N, *S), "kernel" (O, N, *O), groups G) with stride and dilation swapped;
    its (C/G, O, *K') result, K' >= K, is cropped and transposed to (O, C/G, *K)."""
    n, c = x.shape[:2]
    o = g.shape[1]
    d = len(wshape) - 2
    sp = tuple(range(3, 3 + d))
    cg, og = c // groups, o // groups
    xr = x.reshape((n, groups, cg) + tuple(x.shape[2:])).permute((2, 1, 0) + sp)
    xr = xr.reshape((cg, groups * n) + tuple(x.shape[2:]))  # (C/G, G*N, *S), channels (G, N)
    gr = g.reshape((n, groups, og) + tuple(g.shape[2:])).permute((1, 2, 0) + sp)
    gr = gr.reshape((o, n) + tuple(g.shape[2:]))  # (O, N, *O)
    res = ConvNd.apply(xr, gr, stride=tuple(dilation), padding=tuple(pads), dilation=tuple(stride),
                       groups=groups)  # (C/G, O, *K')
    res = _crop_tensor(res, [0] * d, wshape[2:])
    return res.transpose(0, 1).contiguous()  # (O, C/G, *K), contiguous as torch's


def _crop_tensor(t, starts, sizes):
    """``t[..., s0:s0+n0, s1:s1+n1, ...]`` over its trailing dims (differentiable)."""
    if all(s == 0 and t.shape[t.ndim - len(sizes) + i] == n for i, (s, n) in enumerate(zip(starts, sizes))):
        return t
    return t[(Ellipsis,) + tuple(slice(s, s + n) for s, n in zip(starts, sizes))]


class _SameStrideError(RuntimeError, ValueError):
    """torch's functional conv raises RuntimeError (its module ValueError); both catch it.
    (Also output_padding too large: RuntimeError in torch, ValueError in shardflow before.)"""


def _check_stride_bias(stride, bias, out_channels, weight):
    """torch's refusals: a stride below 1 (shardflow divided by it) and a bias that is not
    one value per output channel (shardflow broadcast it silently)."""
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"non-positive stride is not supported (got stride={stride})")
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")


def _warn_uneven_same_once() -> None:
    """torch's warning (once per process) for ``padding='same'`` whose total is odd."""
    if first_time("conv_uneven_same"):
        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                      "zero-padded copy of the input be created", UserWarning, stacklevel=7)


def _resolve_padding(padding, d, ksize, stride, dilation):
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * d
        if padding == "same":
            if any(s != 1 for s in stride):
                raise _SameStrideError(
                    f"padding='same' is not supported for strided convolutions (stride={stride}); "
                    "pass an explicit padding instead"
                )
            pads = []
            for k, dl in zip(ksize, dilation):
                total = dl * (k - 1)
                pads.append((total // 2, total - total // 2))
            if any(lo != hi for lo, hi in pads):
                _warn_uneven_same_once()
            return tuple(pads)
        raise RuntimeError(f"Invalid padding string: {padding!r}; expected 'valid' or 'same' (or an int or a tuple)")
    return tuple((p, p) for p in _tuple(padding, d, "padding"))


def _conv(d, input, weight, bias, stride, padding, dilation, groups):
    name = f"conv{d}d"
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{name}: input and weight must be Tensors, got {type(input).__name__} and "
                        f"{type(weight).__name__}")
    if weight.ndim != d + 2:
        raise RuntimeError(f"{name}: expected a {d + 2}-D weight (out_channels, in_channels/groups, "
                           f"kernel...), got shape {tuple(weight.shape)}")
    if input.ndim not in (d + 1, d + 2):
        raise RuntimeError(f"{name}: expected a {d + 1}-D (unbatched) or {d + 2}-D (batched) input, "
                           f"got shape {tuple(input.shape)}")
    c = input.shape[-d - 1]
    if weight.shape[0] % groups != 0 or c != weight.shape[1] * groups:
        raise RuntimeError(
            f"{name}: input of shape {tuple(input.shape)} has {c} channels but weight of shape "
            f"{tuple(weight.shape)} with groups={groups} expects {weight.shape[1] * groups}; "
            "out_channels must also be divisible by groups"
        )
    _check_dtypes(input, weight, bias)
    stride = _tuple(stride, d, "stride")
    _check_stride_bias(stride, bias, weight.shape[0], weight)
    dilation = _tuple(dilation, d, "dilation")
    pads = _resolve_padding(padding, d, weight.shape[2:], stride, dilation)
    kw = dict(stride=stride, padding=pads, dilation=dilation, groups=int(groups))
    out = ConvNd.apply(input, weight, **kw) if bias is None else ConvNd.apply(input, weight, bias, **kw)
    if d > 1 and out.ndim == d + 2 and (is_channels_last(input.array) or is_channels_last(weight.array)):
        # torch's rule: channels-last in (input or weight), channels-last out; the values are
        # the same, only the layout (``stride()``) follows (backend/memory_format.py)
        out.array = in_memory_format(out.array, channels_last if d == 2 else channels_last_3d)
    return out


@register("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-D convolution over (N, C, L) or (C, L); weight (O, C/groups, K)."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


@register("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D convolution over (N, C, H, W) or (C, H, W); weight (O, C/groups, KH, KW)."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


@register("conv3d")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W); weight (O, C/groups, KD, KH, KW)."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


# --------------------------------------------------------------------------- transposed
class ConvTransposeNd(Function):
    """Transposed convolution: the adjoint of ``ConvNd`` with respect to its input.

    forward: ``cols = W^T @ x`` (one GEMM per group over the batch, ``x`` transposed to
    (C_in, N*L) once), then col2im into the (padded) output and crop ``padding``; backward:
    im2col of the output gradient (the (C*K, N*L) layout of ``ConvNd``) gives
    ``grad_x = W @ cols`` (transposed back to (N, C_in, L)) and ``grad_W = x @ cols^T``.
    """

    save_inputs = (0, 1)

    def forward(self, x, w, b=None, *, stride, padding, output_padding, dilation, groups):
        d = w.ndim - 2
        unbatched = x.ndim == d + 1
        if unbatched:
            x = x[None]
        n, cin = x.shape[:2]
        og = w.shape[1]
        cout = og * groups
        ksize = w.shape[2:]
        isize = x.shape[2:]
        # full (uncropped) output size, and the cropped one
        full = tuple((isize[i] - 1) * stride[i] + dilation[i] * (ksize[i] - 1) + 1 + output_padding[i]
                     for i in range(d))
        osize = tuple(full[i] - 2 * padding[i] for i in range(d))
        if any(s <= 0 for s in osize):
            raise RuntimeError(f"conv_transpose{d}d: output size {osize} is not positive; reduce padding")
        nl = n * int(np.prod(isize))
        xp = get_array_module(x)
        xt = xp.ascontiguousarray(x.swapaxes(0, 1)).reshape(groups, cin // groups, nl)  # (G, Cin_g, N*L)
        wm = w.reshape(groups, cin // groups, og * int(np.prod(ksize)))  # (G, Cin_g, Og*K)
        if xt.dtype == np.float16:  # float32 GEMM and col2im, rounded once (torch's CPU)
            gcols = _matmul_k(wm.transpose(0, 2, 1).astype(np.float32), xt.astype(np.float32))
        else:
            gcols = _matmul_k(wm.transpose(0, 2, 1), xt)  # (G, Og*K, N*L) = (Cout, *K, N, *L)
        outp = _col2im_t(gcols, (n, cout) + full, ksize, stride, dilation, isize)
        pads = tuple((p, p) for p in padding)
        out = _crop(outp, pads, (n, cout) + osize)
        out = xp.ascontiguousarray(out)
        if b is not None:
            out += b.reshape((cout,) + (1,) * d)
        out = _in_dtype_of(out, w, x)  # bfloat16/float16: the GEMM gave float32 (bias added in it)
        self.xt, self.xshape, self.w, self.has_b = xt, x.shape, w, b is not None
        self.meta = (pads, full, stride, dilation, groups, isize, unbatched)
        return out[0] if unbatched else out

    def backward(self, g):
        pads, full, stride, dilation, groups, isize, unbatched = self.meta
        xt, xshape, w = self.xt, self.xshape, self.w
        if w.dtype.kind == "c":  # complex: the gradients take conj(other operand), as torch
            xt, w = xt.conjugate(), w.conjugate()
        if unbatched:
            g = g[None]
        n, cin = xshape[:2]
        ksize = w.shape[2:]
        g16 = g
        if g.dtype == np.float16:  # float32 GEMMs, rounded once at the end (torch's CPU)
            g, w, xt = g.astype(np.float32), w.astype(np.float32), xt.astype(np.float32)
        gp = _pad(g, pads)
        if gp.shape[2:] != full:  # the output_padding region beyond the crop
            extra = tuple((0, f - s) for f, s in zip(full, gp.shape[2:]))
            gp = _pad(gp, extra)
        nl = xt.shape[2]
        cols = _im2col_t(gp, ksize, stride, dilation, isize)  # (Cout, *K, N, *L)
        cols = cols.reshape(groups, w.shape[1] * int(np.prod(ksize)), nl)  # (G, Og*K, N*L)
        gx = gw = gb = None
        if self.needs_input_grad[0]:
            wm = w.reshape(groups, cin // groups, -1)  # (G, Cin_g, Og*K)
            gxt = np.matmul(wm, cols).reshape((cin, n) + tuple(isize))
            gx = get_array_module(gxt).ascontiguousarray(gxt.swapaxes(0, 1))
            if unbatched:
                gx = gx[0]
        if self.needs_input_grad[1]:
            gw = np.matmul(xt, cols.transpose(0, 2, 1)).reshape(w.shape)
        if self.has_b and len(self.needs_input_grad) > 2 and self.needs_input_grad[2]:
            gb = g.sum(axis=(0,) + tuple(range(2, g.ndim)))
        return _as_grad(gx, g16), _as_grad(gw, g16), _as_grad(gb, g16)

    def backward_graph(self, g):
        """The gradients as convolutions (differentiable again): the input's is the
        convolution of ``g`` with the weight, the weight's the correlation of ``g`` with the
        input (``_conv_weight_grad`` with the roles of input and gradient exchanged)."""
        pads, full, stride, dilation, groups, isize, unbatched = self.meta
        need = self.needs_input_grad
        xt, xshape = self.xt, self.xshape
        w = _gg_conj(self.saved_input(1, self.w))
        g4 = g.unsqueeze(0) if unbatched else g  # (N, C_out, *O)
        d = len(isize)
        gx = gw = gb = None
        if need[0]:
            gx = ConvNd.apply(g4, w, stride=tuple(stride), padding=tuple(pads), dilation=tuple(dilation),
                              groups=groups)  # (N, C_in, >= *isize): output padding past stride
            gx = _crop_tensor(gx, [0] * d, isize)
            if unbatched:
                gx = gx.squeeze(0)
        if need[1]:
            n, cin = xshape[:2]
            xa = xt.reshape((cin, n) + tuple(isize)).swapaxes(0, 1)  # (N, C_in, *L)
            x = _gg_conj(self.saved_input(0, xa[0] if unbatched else xa))
            gw = _conv_weight_grad(g4, x.unsqueeze(0) if unbatched else x, self.w.shape, pads,
                                   stride, dilation, groups)
        if not self.has_b:
            return gx, gw
        if len(need) > 2 and need[2]:
            gb = g4.sum(dim=(0,) + tuple(range(2, g4.ndim)))
        return gx, gw, gb


def _conv_transpose(d, input, weight, bias, stride, padding, output_padding, groups, dilation):
    name = f"conv_transpose{d}d"
    if weight.ndim != d + 2:
        raise RuntimeError(f"{name}: expected a {d + 2}-D weight (in_channels, out_channels/groups, "
                           f"kernel...), got shape {tuple(weight.shape)}")
    if input.ndim not in (d + 1, d + 2):
        raise RuntimeError(f"{name}: expected a {d + 1}-D or {d + 2}-D input, got {tuple(input.shape)}")
    c = input.shape[-d - 1]
    if c != weight.shape[0] or c % groups != 0:
        raise RuntimeError(
            f"{name}: input of shape {tuple(input.shape)} has {c} channels but weight of shape "
            f"{tuple(weight.shape)} expects {weight.shape[0]} (divisible by groups={groups})"
        )
    _check_dtypes(input, weight, bias)
    stride = _tuple(stride, d, "stride")
    _check_stride_bias(stride, bias, weight.shape[1] * groups, weight)
    dilation = _tuple(dilation, d, "dilation")
    padding = _tuple(padding, d, "padding")
    output_padding = _tuple(output_padding, d, "output_padding")
    for op_, s, dl in zip(output_padding, stride, dilation):
        if op_ >= max(s, dl):
            raise _SameStrideError(f"{name}: output_padding {output_padding} must be smaller than stride "
                             f"{stride} or dilation {dilation}")
    kw = dict(stride=stride, padding=padding, output_padding=output_padding, dilation=dilation,
              groups=int(groups))
    if bias is None:
        return ConvTransposeNd.apply(input, weight, **kw)
    return ConvTransposeNd.apply(input, weight, bias, **kw)


@register("conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """Transposed 1-D convolution; weight (C_in, C_out/groups, K)."""
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


@register("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """Transposed 2-D convolution; weight (C_in, C_out/groups, KH, KW)."""
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


@register("conv_transpose3d")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """Transposed 3-D convolution; weight (C_in, C_out/groups, KD, KH, KW)."""
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation)
