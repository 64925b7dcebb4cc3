"""Resampling and sliding blocks: ``interpolate`` (``F.interpolate``, ``nn.Upsample``),
``im2col`` (``F.unfold``, ``nn.Unfold``) and ``col2im`` (``F.fold``, ``nn.Fold``). The names
of the last two are PyTorch's ATen ops behind ``F.unfold`` / ``F.fold`` (``Tensor.unfold``
is a different op: a sliding window over one dim).

interpolate (modes nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area, lanczos)
--------------------------------------------------------------------------------------------------
Every mode but ``area`` is separable: along each spatial dim, output position ``o`` reads a
few input positions ("taps") with fixed weights, ``y[o] = sum_t w_t[o] * x[i_t[o]]``. A
*plan* per dim holds ``i_t`` and ``w_t`` (T taps: 1 nearest, 2 linear, 4 cubic), computed
exactly as PyTorch's CPU kernels do, in the same precision (float32 for float32, bfloat16
and float16 inputs, float64 for float64):

* scale: ``align_corners``: ``(in - 1) / (out - 1)`` (0 when out == 1); otherwise
  ``1 / scale_factor`` when a scale factor was given (and not recomputed), else
  ``in / out``.
* linear: ``src = scale * (o + 0.5) - 0.5`` clamped at 0 (``scale * o`` with
  align_corners); ``i0 = min(floor(src), in - 1)``, ``i1 = i0 + (i0 < in - 1)``,
  ``lambda = clamp(src - i0, 0, 1)``, weights ``1 - lambda`` and ``lambda``.
* cubic: the same ``src`` without the clamp at 0, taps ``i0 - 1 .. i0 + 2`` clamped into
  ``[0, in - 1]``, Keys' cubic convolution weights with ``A = -0.75``.
* nearest: ``i = min(floor(o * scale), in - 1)`` with the scale in float32 (``o`` itself
  when out == in, ``o // 2`` when out == 2 * in, as PyTorch); nearest-exact:
  ``floor((o + 0.5) * scale)``.

* ``antialias=True`` (bilinear, bicubic, lanczos; 4-D input): PyTorch's and Pillow's
  filtered resize: output ``o`` reads every input within ``support`` of its centre
  ``scale * (o + 0.5)`` with the filter (triangle, Keys' cubic with ``A = -0.5``, Lanczos-3)
  stretched by the scale when downsampling, weights normalised to sum 1; a plan of
  ``max window`` taps, the unused ones weight 0 (``_aa_plan``). ``lanczos`` needs it.

Forward applies the plans dim by dim with gathers (``take`` along the axis, one per tap):
``O(out * T)`` per row, and a non-finite input value reaches only the outputs that read it.
Backward is the adjoint, dim by dim in reverse: the gradient along a dim is multiplied by
the dense ``(out, in)`` matrix of the plan (one GEMM per dim). ``area`` is adaptive average
pooling, as in PyTorch.

im2col / col2im
---------------
``im2col`` pads ``(N, C, H, W)`` once, takes an ``as_strided`` view of every kernel window
as ``(N, C, kh, kw, oh, ow)`` and copies it to ``(N, C * kh * kw, oh * ow)`` (channel index
``c * kh * kw + i * kw + j``, PyTorch's order). ``col2im`` is its adjoint: it adds the
columns back into a zero padded buffer with one strided slice addition per kernel position
(``kh * kw`` additions, never a loop over pixels), then crops the padding. Each op's
backward is the other one. Unbatched inputs (``(C, H, W)``, ``(C * kh * kw, L)``) work as
in PyTorch.

All arrays come from the input's array module (NumPy or CuPy); float16/bfloat16 are
computed in float32 and cast back.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module
from ._grad_graph import linear_adjoint
from ._util import not_a_tensor, ntuple
from .pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ["interpolate", "im2col", "col2im"]

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area", "lanczos")
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}


def _up(a):
    """float16/bfloat16 -> float32 for the arithmetic (and the dtype to return to)."""
    if a.dtype.itemsize < 4 and a.dtype.kind in "fV":
        return a.astype(np.float32), a.dtype
    return a, None


def _down(a, dt):
    return a if dt is None else a.astype(dt)


# ----------------------------------------------------------------------------- plans


def _area_pixel_scale(n_in: int, n_out: int, align_corners: bool, scale, opmath):
    if align_corners:
        return opmath(n_in - 1) / opmath(n_out - 1) if n_out > 1 else opmath(0)
    if scale is not None and scale > 0:
        return opmath(1.0 / scale)
    return opmath(n_in) / opmath(n_out)


def _nearest_plan(n_in, n_out, scale, exact):
    o = np.arange(n_out)
    if not exact and n_out == n_in:
        idx = o
    elif not exact and n_out == 2 * n_in:
        idx = o >> 1
    else:
        s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out)
        pos = (o.astype(np.float32) + np.float32(0.5)) * s if exact else o.astype(np.float32) * s
        idx = np.minimum(np.floor(pos).astype(np.int64), n_in - 1)
    return idx[None], None


def _source_index(n_in, n_out, scale, align_corners, cubic, opmath):
    s = _area_pixel_scale(n_in, n_out, align_corners, scale, opmath)
    o = np.arange(n_out).astype(opmath)
    if align_corners:
        return s * o
    src = s * (o + opmath(0.5)) - opmath(0.5)
    return src if cubic else np.maximum(src, opmath(0))


def _guard(src, n_in, opmath):
    """PyTorch's guard_index_and_lambda: the tap's base index and its fraction."""
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    lam = np.clip(src - i0.astype(opmath), opmath(0), opmath(1))
    return i0, lam


def _linear_plan(n_in, n_out, scale, align_corners, opmath):
    i0, lam = _guard(_source_index(n_in, n_out, scale, align_corners, False, opmath), n_in, opmath)
    i1 = i0 + (i0 < n_in - 1)
    return np.stack([i0, i1]), np.stack([opmath(1) - lam, lam])


def _cubic_weights(t, opmath):
    a = opmath(-0.75)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = opmath(1)
    return np.stack([far(t + one), near(t), near(one - t), far(one - t + one)])


def _cubic_plan(n_in, n_out, scale, align_corners, opmath):
    i0, lam = _guard(_source_index(n_in, n_out, scale, align_corners, True, opmath), n_in, opmath)
    idx = np.stack([np.clip(i0 - 1 + k, 0, n_in - 1) for k in range(4)])
    return idx, _cubic_weights(lam, opmath)


def _aa_filter(mode, x, opmath):
    """PyTorch's (and Pillow's) anti-aliasing filters: the triangle (bilinear), Keys' cubic
    with ``a = -0.5`` (bicubic) and Lanczos-3 (``sinc(x) sinc(x / 3)``, ``|x| < 3``)."""
    ax = np.abs(x)
    if mode == "bilinear":
        return np.maximum(opmath(1) - ax, opmath(0))
    if mode == "bicubic":
        a = opmath(-0.5)
        near = ((a + 2) * ax - (a + 3)) * ax * ax + 1
        far = ((ax - 5) * ax + 8) * ax * a - 4 * a
        return np.where(ax < 1, near, np.where(ax < 2, far, opmath(0))).astype(opmath)
    with np.errstate(invalid="ignore", divide="ignore"):
        px = np.pi * x.astype(np.float64)
        sinc = np.where(px == 0, 1.0, np.sin(px) / px)
        sinc3 = np.where(px == 0, 1.0, np.sin(px / 3) / (px / 3))
    return np.where(ax < 3, sinc * sinc3, 0.0).astype(opmath)


def _aa_plan(mode, n_in, n_out, scale, align_corners, opmath):
    """The anti-aliased plan (``antialias=True``, PyTorch's ``_compute_weights_aa``): output
    ``o`` reads the inputs within ``support`` of its centre ``scale * (o + 0.5)``, the filter
    stretched by the scale when downsampling (``support = taps / 2 * scale``), weights
    normalised to sum 1 (so the borders renormalise instead of clamping). Taps beyond an
    output's window have weight 0 (the plan is a fixed number of taps per dim)."""
    taps = {"bilinear": 2, "bicubic": 4, "lanczos": 6}[mode]
    s = _area_pixel_scale(n_in, n_out, align_corners, scale, opmath)
    support = opmath(taps * 0.5) * s if s >= 1 else opmath(taps * 0.5)
    invscale = opmath(1) / s if s >= 1 else opmath(1)
    center = s * (np.arange(n_out).astype(opmath) + opmath(0.5))
    xmin = np.maximum((center - support + opmath(0.5)).astype(np.int64), 0)  # C++ truncation
    xsize = np.minimum((center + support + opmath(0.5)).astype(np.int64), n_in) - xmin
    j = np.arange(max(int(xsize.max()), 1))[:, None]  # (T, 1)
    pos = xmin[None, :] + j  # (T, out)
    w = _aa_filter(mode, (pos.astype(opmath) - center + opmath(0.5)) * invscale, opmath)
    w = np.where(j < xsize[None, :], w, opmath(0))
    total = w.sum(axis=0)
    w = np.where(total != 0, w / np.where(total != 0, total, opmath(1)), w).astype(opmath)
    return np.minimum(pos, n_in - 1), w


def _plan(mode, n_in, n_out, scale, align_corners, opmath, antialias=False):
    if antialias:
        return _aa_plan(mode, n_in, n_out, scale, align_corners, opmath)
    if mode in ("nearest", "nearest-exact"):
        return _nearest_plan(n_in, n_out, scale, mode == "nearest-exact")
    if mode == "bicubic":
        return _cubic_plan(n_in, n_out, scale, align_corners, opmath)
    return _linear_plan(n_in, n_out, scale, align_corners, opmath)


# ----------------------------------------------------------------------------- interpolate


class Resample(Function):
    """Separable resampling by per-dim plans ``(axis, in size, taps (T, out), weights or None)``."""

    save_inputs = ()

    def forward(self, x, plans=()):
        self.plans = plans
        return self.linear_forward(x)

    def linear_forward(self, x):
        """The resampling of ``x`` by the saved plans (also the adjoint of ``backward``)."""
        xp = get_array_module(x)
        xa, dt = _up(x) if x.dtype.kind in "fV" else (x, None)
        y = xa
        for axis, _, idx, w in self.plans:
            y = _gather_taps(xp, y, axis, idx, w)
        return _down(y, dt)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear in g with the plans fixed (_grad_graph.py)

    def backward(self, g):
        xp = get_array_module(g)
        ga, dt = _up(g)
        for axis, n_in, idx, w in reversed(self.plans):
            W = _dense(xp, idx, w, n_in, ga.dtype)  # (out, in)
            ga = xp.moveaxis(xp.moveaxis(ga, axis, -1) @ W, -1, axis)
        return _down(ga, dt)


def _gather_taps(xp, y, axis, idx, w):
    if w is None:
        return xp.take(y, xp.asarray(idx[0]), axis=axis)
    shape = [1] * y.ndim
    shape[axis] = -1
    out = None
    for t in range(idx.shape[0]):
        term = xp.take(y, xp.asarray(idx[t]), axis=axis)
        term *= xp.asarray(w[t].astype(y.dtype)).reshape(shape)
        if out is None:
            out = term
        else:
            out += term
    return out


def _dense(xp, idx, w, n_in, dtype):
    """The plan as a dense (out, in) matrix; taps that hit one column add up."""
    n_out = idx.shape[1]
    m = np.zeros((n_out, n_in), dtype=dtype)
    rows = np.arange(n_out)
    for t in range(idx.shape[0]):
        m[rows, idx[t]] += 1 if w is None else w[t]  # rows distinct within one tap
    return xp.asarray(m)


def _spatial_arg(value, dim, what, input_shape):
    if isinstance(value, list | tuple):
        if len(value) != dim:
            noun = "output size of" if what == "size" else "scale_factor of shape"
            fmt = "(o1, o2, ...,oK)" if what == "size" else "(s1, s2, ...,sK)"
            raise ValueError(
                f"Input and {'output' if what == 'size' else 'scale_factor'} must have the same number "
                f"of spatial dimensions, but got input with spatial dimensions of {list(input_shape[2:])} "
                f"and {noun} {value}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                f"{'output size' if what == 'size' else 'scale_factor'} in {fmt} format."
            )
        return list(value)
    return [value] * dim


@register("interpolate")
def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """``torch.nn.functional.interpolate``: resize the spatial dims of (N, C, *spatial) input.

    ``size`` (int or one per spatial dim) or ``scale_factor`` (float or one per dim; the
    output size is ``floor(in * scale)``). The checks and their order follow PyTorch's."""
    if not isinstance(input, Tensor):
        raise not_a_tensor("interpolate: input must be a Tensor", input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    else:
        align_corners = bool(align_corners)
    shape = tuple(input.shape)
    dim = len(shape) - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        output_size = [int(s) for s in _spatial_arg(size, dim, "size", shape)]
        scale_factors = None
    elif scale_factor is not None:
        output_size = None
        scale_factors = [float(s) for s in _spatial_arg(scale_factor, dim, "scale", shape)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if output_size is None:
        output_size = [int(math.floor(float(shape[i + 2]) * scale_factors[i])) for i in range(dim)]
    if recompute_scale_factor:
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and len(shape) == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
            "tensor as input"
        )
    if mode == "lanczos" and not antialias:
        raise ValueError("interpolate: mode='lanczos' requires antialias=True (it is a Lanczos-3 "
                         "anti-aliasing filter); pass antialias=True")
    if mode in ("linear", "bilinear", "trilinear") and dim in (1, 2, 3) and _MODE_DIMS[mode] != dim:
        raise NotImplementedError(f"Got {len(shape)}D input, but {mode} mode needs {_MODE_DIMS[mode] + 2}D input")
    if mode not in _MODES or dim not in (1, 2, 3) or _MODE_DIMS.get(mode, dim) != dim:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {len(shape)}D) for the modes: "
            f"nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})"
        )
    if any(o <= 0 for o in output_size) or any(s <= 0 for s in shape[2:]):
        names = ("D", "H", "W")[3 - dim:]
        got_in = ", ".join(f"{n}: {v}" for n, v in zip(names, shape[2:]))
        got_out = ", ".join(f"{n}: {v}" for n, v in zip(names, output_size))
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({got_in}) output ({got_out})"
        )
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dim - 1]
        return pool(input, tuple(output_size))
    if mode not in ("nearest", "nearest-exact") and not input.dtype.is_floating_point:
        raise RuntimeError(
            f"interpolate: mode '{mode}' needs a floating-point input, got {input.dtype}; "
            "convert it with .float() (or use mode='nearest')"
        )
    opmath = np.float64 if input.array.dtype == np.float64 else np.float32
    plans = []
    for i in range(dim):
        scale = None if scale_factors is None else scale_factors[i]
        idx, w = _plan(mode, shape[i + 2], output_size[i], scale, align_corners, opmath, antialias)
        plans.append((i + 2, shape[i + 2], idx, w))
    return Resample.apply(input, plans=tuple(plans))


# ----------------------------------------------------------------------------- im2col / col2im


def _block_geometry(op, spatial, kernel_size, dilation, padding, stride):
    k = ntuple(kernel_size, 2, "kernel_size")
    d = ntuple(dilation, 2, "dilation")
    p = ntuple(padding, 2, "padding")
    s = ntuple(stride, 2, "stride")
    for name, v in (("kernel size", k), ("dilation", d), ("stride", s)):
        if min(v) <= 0:
            raise RuntimeError(f"{op}: {name} should be greater than zero, but got {name.split()[0]}={v}")
    if min(p) < 0:
        raise RuntimeError(f"{op}: padding should be non-negative, but got padding={p}")
    blocks = tuple((spatial[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if min(blocks) < 1:
        raise RuntimeError(
            f"{op}: Given input with spatial size {tuple(spatial)}, kernel_size={k}, dilation={d}, "
            f"padding={p}, calculated shape of the array of sliding blocks as {blocks}, but its "
            "components must be at least one; use a smaller kernel or dilation, or more padding"
        )
    return k, d, p, s, blocks


def _im2col(xp, x, k, d, p, s, blocks):
    """(N, C, H, W) -> (N, C*kh*kw, oh*ow)."""
    n, c, h, w = x.shape
    if p[0] or p[1]:
        xpad = xp.zeros((n, c, h + 2 * p[0], w + 2 * p[1]), dtype=x.dtype)
        xpad[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = x
    else:
        xpad = xp.ascontiguousarray(x)
    st = xpad.strides
    view = xp.lib.stride_tricks.as_strided(
        xpad, shape=(n, c, k[0], k[1], blocks[0], blocks[1]),
        strides=(st[0], st[1], st[2] * d[0], st[3] * d[1], st[2] * s[0], st[3] * s[1]),
    )
    return view.reshape(n, c * k[0] * k[1], blocks[0] * blocks[1])


def _col2im(xp, cols, out_hw, k, d, p, s, blocks):
    """(N, C*kh*kw, oh*ow) -> (N, C, H, W): each column added back where it was read."""
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    h, w = out_hw
    buf = xp.zeros((n, c, h + 2 * p[0], w + 2 * p[1]), dtype=cols.dtype)
    c6 = cols.reshape(n, c, k[0], k[1], blocks[0], blocks[1])
    for i in range(k[0]):
        r0 = i * d[0]
        rows = slice(r0, r0 + s[0] * (blocks[0] - 1) + 1, s[0])
        for j in range(k[1]):
            c0 = j * d[1]
            buf[:, :, rows, slice(c0, c0 + s[1] * (blocks[1] - 1) + 1, s[1])] += c6[:, :, i, j]
    return buf[:, :, p[0]:p[0] + h, p[1]:p[1] + w]


class Im2Col(Function):
    save_inputs = ()

    def forward(self, x, geometry=None, batched=True):
        xp = get_array_module(x)
        xa, dt = _up(x)
        xb = xa if batched else xa[None]
        k, d, p, s, blocks = geometry
        out = _im2col(xp, xb, k, d, p, s, blocks)
        self.geometry, self.batched, self.hw, self.dt = geometry, batched, xb.shape[2:], dt
        return _down(out if batched else out[0], dt)

    def linear_forward(self, h):
        """``h`` (the input's shape) unfolded with the saved geometry."""
        xp = get_array_module(h)
        ha, dt = _up(h)
        out = _im2col(xp, ha if self.batched else ha[None], *self.geometry)
        return _down(out if self.batched else out[0], dt)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear: fold <-> unfold (_grad_graph.py)

    def backward(self, g):
        xp = get_array_module(g)
        ga, dt = _up(g)
        gb = ga if self.batched else ga[None]
        gx = _col2im(xp, gb, self.hw, *self.geometry)
        gx = gx if self.batched else gx[0]
        return _down(xp.ascontiguousarray(gx), dt)


class Col2Im(Function):
    save_inputs = ()

    def forward(self, cols, output_size=None, geometry=None, batched=True):
        xp = get_array_module(cols)
        ca, dt = _up(cols)
        cb = ca if batched else ca[None]
        out = xp.ascontiguousarray(_col2im(xp, cb, output_size, *geometry))
        self.geometry, self.batched, self.dt, self.out_hw = geometry, batched, dt, output_size
        return _down(out if batched else out[0], dt)

    def linear_forward(self, h):
        """``h`` (the columns' shape) folded with the saved geometry."""
        xp = get_array_module(h)
        ha, dt = _up(h)
        out = xp.ascontiguousarray(_col2im(xp, ha if self.batched else ha[None], self.out_hw, *self.geometry))
        return _down(out if self.batched else out[0], dt)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear: unfold <-> fold (_grad_graph.py)

    def backward(self, g):
        xp = get_array_module(g)
        ga, dt = _up(g)
        gb = ga if self.batched else ga[None]
        gc = _im2col(xp, gb, *self.geometry)
        return _down(gc if self.batched else gc[0], dt)


@register("im2col")
def im2col(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``F.unfold``: sliding local blocks of (N, C, H, W) (or (C, H, W)) as columns,
    (N, C * kh * kw, L) with L the number of blocks."""
    if not isinstance(input, Tensor):
        raise TypeError(f"unfold: input must be a Tensor, got {type(input).__name__}")
    if input.ndim not in (3, 4):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(input.shape)}; F.unfold takes (N, C, H, W) or (C, H, W)"
        )
    geometry = _block_geometry("unfold", tuple(input.shape[-2:]), kernel_size, dilation, padding, stride)
    return Im2Col.apply(input, geometry=geometry, batched=input.ndim == 4)


@register("col2im")
def col2im(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``F.fold``: sum columns (N, C * kh * kw, L) (or (C * kh * kw, L)) back into
    (N, C, *output_size); overlapping blocks add up."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fold: input must be a Tensor, got {type(input).__name__}")
    shape = tuple(input.shape)
    if len(shape) not in (2, 3) or 0 in shape[-2:]:
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
            f"dimensions for input, but got: {list(shape)}"
        )
    out_hw = ntuple(output_size, 2, "output_size")
    k, d, p, s, blocks = _block_geometry("fold", out_hw, kernel_size, dilation, padding, stride)
    if shape[-2] % (k[0] * k[1]):
        raise RuntimeError(
            f"Expected size of input's dimension {len(shape) - 2} to be divisible by the product of "
            f"kernel_size, but got input.size({len(shape) - 2})={shape[-2]} and kernel_size={k}"
        )
    if shape[-1] != blocks[0] * blocks[1]:
        raise RuntimeError(
            f"Given output_size={out_hw}, kernel_size={k}, dilation={d}, padding={p}, stride={s}, "
            f"expected size of input's dimension {len(shape) - 1} to match the calculated number of "
            f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
            f"input.size({len(shape) - 1})={shape[-1]}."
        )
    return Col2Im.apply(input, output_size=out_hw, geometry=(k, d, p, s, blocks), batched=len(shape) == 3)
