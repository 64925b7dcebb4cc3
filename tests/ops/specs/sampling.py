"""Specs for interpolate / unfold / fold (shardflow/ops/sampling.py): forward and backward vs
torch.nn.functional, and float64 finite differences. Sizes are chosen so that the index
mappings hit their special cases: exact 2x (nearest's shift), non-integer scales up and
down, a given scale_factor vs the recomputed one, align_corners both ways, one output
position (align_corners scale 0), clamped cubic taps at the borders."""

from shardflow.testing.opspec import Arg, OpSpec


def _F(m):
    return m.nn.functional


def _interp(**kw):
    return lambda m, x: _F(m).interpolate(x, **kw)


X3, X4, X5 = Arg((2, 3, 5)), Arg((2, 2, 4, 5)), Arg((1, 2, 3, 2, 4))

SPECS = [
    # ---------------------------------------------------------------- nearest
    OpSpec("interp_nearest_size_1d", _interp(size=8), [X3]),
    OpSpec("interp_nearest_x2", _interp(scale_factor=2), [X4]),
    OpSpec("interp_nearest_scale_up", _interp(scale_factor=(1.7, 2.5)), [X4]),
    OpSpec("interp_nearest_scale_down", _interp(scale_factor=0.6), [Arg((1, 2, 7, 9))]),
    OpSpec("interp_nearest_size_3d", _interp(size=(4, 3, 7)), [X5]),
    OpSpec("interp_nearest_exact", _interp(size=(3, 7), mode="nearest-exact"), [X4]),
    OpSpec("interp_nearest_exact_scale", _interp(scale_factor=1.5, mode="nearest-exact"), [X3]),
    # ---------------------------------------------------------------- linear / bilinear / trilinear
    OpSpec("interp_linear_size", _interp(size=9, mode="linear"), [X3]),
    OpSpec("interp_linear_align", _interp(size=9, mode="linear", align_corners=True), [X3]),
    OpSpec("interp_linear_down_scale", _interp(scale_factor=0.5, mode="linear"), [Arg((2, 2, 9))]),
    OpSpec("interp_bilinear_size", _interp(size=(7, 9), mode="bilinear"), [X4]),
    OpSpec("interp_bilinear_align", _interp(size=(7, 9), mode="bilinear", align_corners=True), [X4]),
    OpSpec("interp_bilinear_scale", _interp(scale_factor=(1.5, 2.25), mode="bilinear"), [X4]),
    OpSpec("interp_bilinear_scale_align", _interp(scale_factor=2, mode="bilinear", align_corners=True), [X4]),
    OpSpec("interp_bilinear_down", _interp(size=(3, 2), mode="bilinear"), [Arg((1, 2, 7, 6))]),
    OpSpec("interp_bilinear_recompute", _interp(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True),
           [X4]),
    OpSpec("interp_bilinear_one_pixel_align", _interp(size=(1, 3), mode="bilinear", align_corners=True), [X4]),
    OpSpec("interp_trilinear", _interp(size=(4, 3, 6), mode="trilinear"), [X5]),
    OpSpec("interp_trilinear_align", _interp(scale_factor=(2, 1.5, 0.5), mode="trilinear", align_corners=True),
           [X5]),
    # ---------------------------------------------------------------- bicubic
    OpSpec("interp_bicubic_size", _interp(size=(7, 9), mode="bicubic"), [X4]),
    OpSpec("interp_bicubic_align", _interp(size=(7, 9), mode="bicubic", align_corners=True), [X4]),
    OpSpec("interp_bicubic_scale", _interp(scale_factor=2.5, mode="bicubic"), [X4]),
    OpSpec("interp_bicubic_down", _interp(size=(3, 2), mode="bicubic"), [Arg((1, 2, 8, 7))]),
    # ---------------------------------------------------------------- area (adaptive average pooling)
    OpSpec("interp_area_size", _interp(size=(2, 3), mode="area"), [Arg((1, 2, 6, 7))]),
    OpSpec("interp_area_scale", _interp(scale_factor=0.5, mode="area"), [Arg((1, 2, 6, 8))]),
    # ---------------------------------------------------------------- unfold / fold
    OpSpec("unfold_basic", lambda m, x: _F(m).unfold(x, (2, 3)), [Arg((2, 3, 4, 5))]),
    OpSpec("unfold_dilation_padding_stride",
           lambda m, x: _F(m).unfold(x, 3, dilation=(1, 2), padding=1, stride=(2, 1)), [Arg((2, 2, 5, 6))]),
    OpSpec("unfold_unbatched", lambda m, x: _F(m).unfold(x, 2, stride=2), [Arg((3, 4, 6))]),
    OpSpec("fold_basic", lambda m, c: _F(m).fold(c, (4, 5), (2, 3)), [Arg((2, 18, 9))]),
    OpSpec("fold_overlap_dilation_padding_stride",
           lambda m, c: _F(m).fold(c, (5, 6), 3, dilation=(1, 2), padding=1, stride=(2, 1)), [Arg((2, 18, 12))]),
    OpSpec("fold_unbatched", lambda m, c: _F(m).fold(c, (4, 6), 2, stride=2), [Arg((12, 6))]),
    OpSpec("fold_of_unfold", lambda m, x: _F(m).fold(_F(m).unfold(x, 2), (4, 5), 2), [Arg((1, 2, 4, 5))]),
]
