"""Differential fuzzing of resampling against PyTorch (see ``_diff.py``): interpolate in
every mode (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area) with
``size`` or ``scale_factor`` (up and down, fractional), align_corners,
recompute_scale_factor and antialias; grid_sample (4-D; bilinear, nearest; zeros,
border, reflection padding; align_corners) on grids reaching outside [-1, 1];
affine_grid. Batch-less inputs where torch takes them, non-contiguous inputs; backward."""

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ._diff import FUZZ, check, inp

MODES = {1: ["nearest", "nearest-exact", "linear", "area"],
         2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
         3: ["nearest", "nearest-exact", "trilinear", "area"]}


@st.composite
def interp_case(draw):
    nd = draw(st.integers(1, 3))
    mode = draw(st.sampled_from(MODES[nd]))
    sp = tuple(draw(st.integers(1, 5)) for _ in range(nd))
    kw = {"mode": mode}
    if draw(st.booleans()):
        size = tuple(draw(st.integers(1, 7)) for _ in range(nd))
        kw["size"] = size if nd > 1 or draw(st.booleans()) else size[0]
    else:
        sc = tuple(draw(st.sampled_from([0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0])) for _ in range(nd))
        kw["scale_factor"] = sc if draw(st.booleans()) else sc[0]
        if kw["scale_factor"] == sc[0]:
            sc = (sc[0],) * nd
        # SKIP: an output size of 0. torch's 'area' (adaptive_avg_pool) returns an empty
        # tensor there and its other modes raise; shardflow raises for every mode
        assume(all(int(n * f) >= 1 for n, f in zip(sp, sc)))
        if draw(st.booleans()):
            kw["recompute_scale_factor"] = draw(st.booleans())
    if mode in ("linear", "bilinear", "bicubic", "trilinear"):
        kw["align_corners"] = draw(st.booleans())
        if mode in ("bilinear", "bicubic") and draw(st.booleans()):
            kw["antialias"] = True
    x = draw(inp(shape=(draw(st.integers(1, 2)), draw(st.integers(1, 2))) + sp,
                 dtypes=("float32", "float64"), specials=False))
    return kw, x


@settings(FUZZ, max_examples=60)
@given(case=interp_case(), grad=st.booleans())
def test_interpolate(case, grad):
    kw, x = case
    # bicubic and antialias weights are computed in another order: a scaled tolerance
    check(lambda L, t: L.nn.functional.interpolate(t, **kw), [x], grad=grad, scale_tol=4)


@st.composite
def grid_case(draw):
    # SKIP: 5-D grids and mode='bicubic' are not built (shardflow raises NotImplementedError)
    nd = 2
    mode = draw(st.sampled_from(["bilinear", "nearest"]))
    pm = draw(st.sampled_from(["zeros", "border", "reflection"]))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    sp = tuple(draw(st.integers(1, 4)) for _ in range(nd))
    osp = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    x = draw(inp(shape=(n, c) + sp, dtypes=("float64",), specials=False))
    g = draw(inp(shape=(n,) + osp + (nd,), dtypes=("float64",), specials=False))
    g.values = g.values / 4.0  # mostly in [-2.5, 2.5]: inside and outside the image
    return mode, pm, draw(st.booleans()), x, g


@settings(FUZZ, max_examples=45)
@given(case=grid_case(), grad=st.booleans())
def test_grid_sample(case, grad):
    mode, pm, ac, x, g = case
    check(lambda L, t, gr: L.nn.functional.grid_sample(t, gr, mode=mode, padding_mode=pm, align_corners=ac),
          [x, g], grad=grad and mode != "nearest", scale_tol=4)


@st.composite
def affine_case(draw):
    nd = draw(st.integers(2, 3))
    n = draw(st.integers(1, 2))
    size = (n, draw(st.integers(1, 2))) + tuple(draw(st.integers(1, 4)) for _ in range(nd))
    theta = draw(inp(shape=(n, nd, nd + 1), dtypes=("float32", "float64"), specials=False))
    return size, draw(st.booleans()), theta


@settings(FUZZ, max_examples=18)
@given(case=affine_case(), grad=st.booleans())
def test_affine_grid(case, grad):
    size, ac, theta = case
    check(lambda L, th: L.nn.functional.affine_grid(th, size, align_corners=ac), [theta], grad=grad, scale_tol=4)
