"""``grid_sample`` for 4-D input (``F.grid_sample``; ``affine_grid`` builds grids in
``nn/functional_extra.py``).

``out[n, c, h, w] = input[n, c]`` sampled at ``grid[n, h, w] = (x, y)`` in ``[-1, 1]``
coordinates (``x`` across the width). Steps, as PyTorch's CPU kernel:

1. unnormalise: ``ix = (x + 1) ((W - 1) / 2)`` with ``align_corners``, else
   ``(x + 1) (W / 2) - 0.5`` (pixel centres), in that order of operations (the kernel's);
   the same for ``iy``;
2. padding: ``border`` clips to ``[0, W - 1]``; ``reflection`` reflects about the edges
   (``[0, W - 1]`` with ``align_corners``, ``[-0.5, W - 0.5]`` without) and then clips;
   ``zeros`` leaves it, and samples falling outside read zero;
3. ``bilinear``: the four neighbours ``floor(ix), floor(ix) + 1`` (and ``iy``) weighted by the
   distances; ``nearest``: the neighbour at ``round(ix)`` (half to even).

Backward: ``input`` gets ``g`` scattered to the neighbours with the same weights
(``add.at`` of channel rows into the channels-last input, corner by corner); ``grid`` gets
``sum_c g * d(out)/d(ix)`` (differences of the neighbours) times ``d(ix)/d(x)`` and the
padding step's derivative (0 where clipped, -1 where reflected an odd number of times); ``nearest`` gives the grid no gradient. ``bicubic`` and 5-D input are not
implemented (they raise).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import get_array_module
from . import _grad_graph as _gg
from .index import Index, IndexPut, _add_at

__all__ = ["grid_sample"]


def _unnormalize(coord, size, align_corners):
    # PyTorch's CPU kernel's order of operations, in the grid's dtype (ComputeLocationBase:
    # `(x + 1) * scale - 0.5`); `((x + 1) * size - 1) / 2` rounds differently, and a
    # point at a pixel centre must land on the same side of it as in PyTorch (the bilinear
    # gradient there is one-sided)
    one = coord.dtype.type(1)
    if align_corners:
        scale = coord.dtype.type((size - 1) / 2)
        return (coord + one) * scale, scale
    scale = coord.dtype.type(size / 2)
    return (coord + one) * scale - coord.dtype.type(0.5), scale


def _clip(xp, coord, size):
    """Clip to [0, size - 1] and the derivative (1 inside, 0 where clipped)."""
    c = xp.clip(coord, 0, size - 1)
    return c, ((coord > 0) & (coord < size - 1)).astype(coord.dtype)


def _reflect(xp, coord, twice_low, twice_high):
    """PyTorch's reflect_coordinates and its derivative (+-1)."""
    if twice_low == twice_high:
        return xp.zeros_like(coord), xp.zeros_like(coord)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = coord - lo
    sign = xp.where(c < 0, -1.0, 1.0).astype(coord.dtype)
    c = xp.abs(c)
    extra = xp.fmod(c, span)
    flips = xp.floor(c / span)
    even = (flips % 2) == 0
    out = xp.where(even, extra + lo, span - extra + lo)
    return out, sign * xp.where(even, 1.0, -1.0).astype(coord.dtype)


def _source_index(xp, coord, size, padding_mode, align_corners):
    """Pixel coordinate, d(pixel)/d(normalised) for each sample."""
    ix, scale = _unnormalize(coord, size, align_corners)
    d = xp.full(ix.shape, scale, dtype=ix.dtype)
    if padding_mode == "border":
        ix, dc = _clip(xp, ix, size)
        d = d * dc
    elif padding_mode == "reflection":
        if align_corners:
            ix, dr = _reflect(xp, ix, 0, 2 * (size - 1))
        else:
            ix, dr = _reflect(xp, ix, -1, 2 * size - 1)
        ix, dc = _clip(xp, ix, size)
        d = d * dr * dc
    return ix, d


class GridSample2d(Function):
    def forward(self, inp, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
        xp = get_array_module(inp)
        N, C, H, W = inp.shape
        dt = inp.dtype
        wide = np.float32 if dt.kind == "V" or dt.itemsize < 4 else dt
        a = inp.astype(wide, copy=False)
        gx = grid[..., 0].astype(wide, copy=False)
        gy = grid[..., 1].astype(wide, copy=False)
        ix, dix = _source_index(xp, gx, W, padding_mode, align_corners)  # (N, Ho, Wo)
        iy, diy = _source_index(xp, gy, H, padding_mode, align_corners)
        n = xp.arange(N)[:, None, None]
        self.shape, self.mode, self.dt, self.wide = inp.shape, mode, dt, wide
        self.a, self.b, self.ix, self.iy = inp, grid, ix, iy  # for backward_graph
        # the input as (N*H*W, C) rows: a sample's C values are one row, so each corner is
        # one take of rows (a[n, :, yc, xc] gathered element by element: 4x slower)
        rows = xp.moveaxis(a, 1, -1).reshape(N * H * W, C)
        if mode == "nearest":
            xi, yi = xp.rint(ix).astype(np.int64), xp.rint(iy).astype(np.int64)
            ok = (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
            xc, yc = xp.clip(xi, 0, W - 1), xp.clip(yi, 0, H - 1)
            self.rows = [(n * H + yc) * W + xc]
            okw = ok.astype(wide)  # times a 0/1 float, not the bool (a casting loop, 3x slower)
            vals = xp.take(rows, self.rows[0], axis=0) * okw[..., None]  # (N, Ho, Wo, C)
            self.corners = [(yc, xc, okw)]
            return xp.moveaxis(vals, -1, 1).astype(dt, copy=False)
        x0, y0 = xp.floor(ix), xp.floor(iy)
        tx, ty = ix - x0, iy - y0
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        corners, out, self.rows = [], 0, []
        for dy, wy in ((0, 1 - ty), (1, ty)):
            for dx, wx in ((0, 1 - tx), (1, tx)):
                xs, ys = x0 + dx, y0 + dy
                ok = (xs >= 0) & (xs < W) & (ys >= 0) & (ys < H)
                xc, yc = xp.clip(xs, 0, W - 1), xp.clip(ys, 0, H - 1)
                self.rows.append((n * H + yc) * W + xc)
                okw = ok.astype(wide)  # times a 0/1 float, not the bool (a casting loop, 3x slower)
                v = xp.take(rows, self.rows[-1], axis=0) * okw[..., None]  # (N, Ho, Wo, C)
                corners.append((yc, xc, okw * wx * wy, v, dx, dy))
                out = out + v * (wx * wy)[..., None]
        self.corners, self.tx, self.ty, self.dix, self.diy = corners, tx, ty, dix, diy
        return xp.moveaxis(out, -1, 1).astype(dt, copy=False)

    def backward(self, g):
        xp = get_array_module(g)
        N, C, H, W = self.shape
        # (N, Ho, Wo, C), made contiguous once: the eight products below read it (they were
        # C-contiguous already, following the corner values: the same sums over C)
        gw = xp.ascontiguousarray(xp.moveaxis(g.astype(self.wide, copy=False), 1, -1))
        g_in = g_grid = None
        if self.needs_input_grad[0]:
            acc = xp.zeros((N, H, W, C), self.wide)
            for rows, (_, _, w, *_) in zip(self.rows, self.corners, strict=True):
                # one row index into (N*H*W, C): NumPy's fast flat add.at, sums in this order
                _add_at(acc.reshape(N * H * W, C), rows, gw * w[..., None])
            g_in = xp.moveaxis(acc, -1, 1).astype(self.dt, copy=False)
        if self.needs_input_grad[1]:
            if self.mode == "nearest":
                g_grid = xp.zeros(gw.shape[:3] + (2,), self.wide)
            else:
                tx, ty = self.tx, self.ty
                dout_dx = dout_dy = 0
                for _, _, _, v, dx, dy in self.corners:
                    wx = tx if dx else 1 - tx
                    wy = ty if dy else 1 - ty
                    s = (gw * v).sum(-1)  # (N, Ho, Wo)
                    dout_dx = dout_dx + s * wy * (1.0 if dx else -1.0)
                    dout_dy = dout_dy + s * wx * (1.0 if dy else -1.0)
                g_grid = xp.stack([dout_dx * self.dix, dout_dy * self.diy], axis=-1)
            g_grid = g_grid.astype(self.dt, copy=False)
        return g_in, g_grid

    def _pixel_coords(self, grid_t: Tensor):
        """The pixel coordinates ``ix``, ``iy`` as Tensors of ``grid``: the map from the grid
        is piecewise affine (unnormalise, clip, reflect), so ``ix + dix (x - x0)`` at the
        saved point is exact in value and in every derivative."""
        b = self.b
        ix = _wrap(self.ix.astype(b.dtype)) + _wrap(self.dix.astype(b.dtype)) * (grid_t[..., 0] - _wrap(b[..., 0]))
        iy = _wrap(self.iy.astype(b.dtype)) + _wrap(self.diy.astype(b.dtype)) * (grid_t[..., 1] - _wrap(b[..., 1]))
        return ix, iy

    def backward_graph(self, g):
        """``backward`` with Tensors, in the input's dtype: the bilinear weights are Tensors
        of the grid (``_pixel_coords``), the corner values Tensors of the input; corner
        indices, in-bounds masks and the padding's slopes are constants."""
        xp = get_array_module(g.array)
        N, C, H, W = self.shape
        dtype = g.array.dtype
        gw = g.permute(0, 2, 3, 1)  # (N, Ho, Wo, C)
        n = xp.arange(N)[:, None, None]
        need_in, need_grid = self.needs_input_grad[0], self.needs_input_grad[1]
        if self.mode == "nearest":
            g_in = None
            if need_in:
                yc, xc, ok = self.corners[0]
                g_in = _scatter_corner(xp, gw * _wrap(ok[..., None].astype(dtype)), n, yc, xc, (N, H, W, C))
                g_in = g_in.permute(0, 3, 1, 2)
            g_grid = _wrap(xp.zeros(self.b.shape, dtype)) if need_grid else None
            return g_in, g_grid
        ix, iy = self._pixel_coords(self.saved_input(1, self.b))
        x0, y0 = xp.floor(self.ix), xp.floor(self.iy)
        tx, ty = ix - _wrap(x0.astype(dtype)), iy - _wrap(y0.astype(dtype))
        inp_t = self.saved_input(0, self.a).permute(0, 2, 3, 1)  # (N, H, W, C)
        g_in, dout_dx, dout_dy = None, 0, 0
        for yc, xc, _, _, dx, dy in self.corners:
            xs, ys = x0 + dx, y0 + dy
            ok = _gg.const((xs >= 0) & (xs < W) & (ys >= 0) & (ys < H), g)  # (N, Ho, Wo)
            wx = tx if dx else 1 - tx
            wy = ty if dy else 1 - ty
            if need_in:
                part = _scatter_corner(xp, gw * (ok * wx * wy).unsqueeze(-1), n, yc, xc, (N, H, W, C))
                g_in = part if g_in is None else g_in + part
            if need_grid:
                at = (n, yc, xc)
                v = Index.apply(inp_t, idx=at, unique=False, add_idx=at) * ok.unsqueeze(-1)  # (N, Ho, Wo, C)
                s = (gw * v).sum(-1)  # (N, Ho, Wo)
                dout_dx = dout_dx + s * wy * (1.0 if dx else -1.0)
                dout_dy = dout_dy + s * wx * (1.0 if dy else -1.0)
        g_grid = None
        if need_grid:
            stack = _gg.op("stack")
            g_grid = stack([dout_dx * _gg.const(self.dix, g), dout_dy * _gg.const(self.diy, g)], -1)
        return (g_in.permute(0, 3, 1, 2) if need_in else None), g_grid


def _scatter_corner(xp, values, n, yc, xc, shape):
    """``zeros(shape)`` with ``values`` (N, Ho, Wo, C) added at ``[n, yc, xc]`` (repeats
    accumulate), linear in ``values``."""
    at = (n, yc, xc)
    return IndexPut.apply(_wrap(xp.zeros(shape, values.array.dtype)), values, idx=at, accumulate=True, add_idx=at)


@register("grid_sample")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners=None) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` at ``grid`` ``(N, Ho, Wo, 2)`` (module docstring)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if mode == "bicubic" or input.ndim != 4:
        raise NotImplementedError(
            f"grid_sample: shardflow implements 4-D input with mode 'bilinear' or 'nearest' (got {input.ndim}-D, "
            f"mode {mode!r}); 5-D input and bicubic are not built"
        )
    if grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sample(): expected grid of shape (N={input.shape[0]}, H, W, 2), got {tuple(grid.shape)}")
    if grid.dtype is not input.dtype:
        raise RuntimeError(f"grid_sample(): expected input and grid to have same dtype, but input has {input.dtype} "
                           f"and grid has {grid.dtype}")
    return GridSample2d.apply(input, grid, mode=mode, padding_mode=padding_mode, align_corners=bool(align_corners))
