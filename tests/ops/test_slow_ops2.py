"""The fast paths of session 32's slow ops (docs/BENCH.md, "Slow ops"): values and gradients
against PyTorch, and bit for bit against the code each replaced where that was bit-exact.
Speed is not tested (it lives in docs/BENCH.md)."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(shape, seed, dtype=np.float32, grad=True):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (torch.tensor(a, requires_grad=grad), sf.tensor(a, requires_grad=grad))


def _close(s, t, tol):
    np.testing.assert_allclose(np.asarray(s.detach().numpy()), t.detach().numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------- bilinear
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", [((40, 6), (40, 5), (7, 6, 5)), ((2, 3, 4), (2, 3, 6), (5, 4, 6)),
                                    ((4,), (6,), (3, 4, 6)), ((0, 4), (0, 6), (3, 4, 6))])
def test_bilinear_matches_torch_with_gradients(shapes, dtype):
    """The GEMM form: values, first and second derivatives as torch's, bias included."""
    (t1, s1), (t2, s2), (tw, sw) = (_pair(s, k, dtype) for k, s in enumerate(shapes))
    tb, sb = _pair(shapes[2][:1], 9, dtype)
    ty = torch.nn.functional.bilinear(t1, t2, tw, tb)
    sy = sf.nn.functional.bilinear(s1, s2, sw, sb)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    _close(sy, ty, tol)
    assert sy.dtype == getattr(sf, ty.dtype.__str__().split(".")[1])
    tg, sg = _pair(tuple(ty.shape), 11, dtype, grad=False)
    tgr = torch.autograd.grad(ty, (t1, t2, tw, tb), tg, create_graph=True)
    sgr = sf.autograd.grad(sy, (s1, s2, sw, sb), sg, create_graph=True)
    for s, t in zip(sgr, tgr):
        _close(s, t, tol)
    # second order: the gradient of sum(grad_w ** 2) by input1
    (tgg,) = torch.autograd.grad((tgr[2] ** 2).sum(), t1, allow_unused=True)
    (sgg,) = sf.autograd.grad((sgr[2] ** 2).sum(), s1, allow_unused=True)
    _close(sgg, tgg, 1e-4 if dtype == np.float32 else 1e-10)


def test_bilinear_broadcast_rows_are_refused_as_torch():
    """Rows that differ in shape are not the GEMM form's; they used to broadcast through the
    einsum, but torch refuses them, and so does shardflow since session 40
    (``tests/nn/test_bilinear_checks.py``)."""
    x1 = sf.randn(3, 1, 4)
    x2 = sf.randn(1, 5, 6)
    w = sf.randn(2, 4, 6)
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 3 and 1"):
        sf.nn.functional.bilinear(x1, x2, w)


# ---------------------------------------------------------------------------- x[idx] backward
@pytest.mark.parametrize("tail", [(Ellipsis,), (slice(None),), (slice(None), Ellipsis), (slice(1, None),)])
def test_flat_at_trailing_full_slices_bit_for_bit(tail):
    """A row index ending in ``...`` or ``:`` (indexing's parse of ``x[idx]``) takes the flat
    row route and sums in ``np.add.at``'s order; a partial slice still goes to ``add.at``."""
    from shardflow.backend.flat_at import flat_at, row_plan

    rng = np.random.default_rng(0)
    idx = rng.integers(-50, 50, 400)
    vals = (rng.standard_normal((400, 4, 3)) * 1e3).astype(np.float32)
    if tail[0] == slice(1, None):
        vals = vals[:, 1:]
    want, got = np.zeros((50, 4, 3), np.float32), np.zeros((50, 4, 3), np.float32)
    np.add.at(want, (idx, *tail), vals)
    flat_at(np.add, got, (idx, *tail), vals)
    assert want.tobytes() == got.tobytes()
    assert (row_plan(got, (idx, *tail), vals) is None) == (tail[0] == slice(1, None))


def test_fancy_index_backward_repeats_match_torch():
    """``x[idx]`` with repeated rows: the gradient sums the repeats as torch's, and bit for bit
    as ``np.add.at`` (the code the row kernel replaced here)."""
    tx, sx = _pair((300, 16), 0)
    idx = np.random.default_rng(1).integers(-300, 300, 2000)
    g = np.random.default_rng(2).standard_normal((2000, 16)).astype(np.float32)
    tx[torch.tensor(idx)].backward(torch.tensor(g))
    sx[sf.tensor(idx)].backward(sf.tensor(g))
    _close(sx.grad, tx.grad, 1e-5)
    want = np.zeros((300, 16), np.float32)
    np.add.at(want, idx, g)
    assert sx.grad.numpy().tobytes() == want.tobytes()


# ---------------------------------------------------------------------------- normal_
def test_normal_large_bitwise_like_torch():
    """A 1M-element ``normal_`` (the compiled Box-Muller's vectorised log; its power-of-two
    scale made as bits, not gathered from a table) keeps torch's bits."""
    torch.manual_seed(7)
    sf.manual_seed(7)
    want = torch.empty(1024, 1024).normal_().numpy()
    got = sf.empty(1024, 1024).normal_().numpy()
    assert got.tobytes() == want.tobytes()


def test_box_muller_kernel_every_exponent_bitwise():
    """u1 at every power-of-two edge of x = 1 - u1 on uniform24's grid (each float32 exponent
    field the log meets, and an ulp either side): the kernel's bits are the NumPy path's."""
    from shardflow import kernels
    from shardflow.backend import avx_mathfun as m

    if not kernels.available():
        pytest.skip("numba not installed")
    from shardflow.kernels import box_muller

    xs = []
    for k in range(25):
        x = np.float32(2.0 ** -k)
        xs += [x, np.nextafter(x, np.float32(2)), np.nextafter(x, np.float32(0))]
    u1 = np.float32(1) - np.array(xs, np.float32)
    u1 = u1[(u1 >= 0) & (u1 < 1) & (np.floor(u1 * 2**24) == u1 * 2**24)]
    u1 = np.resize(u1, 8 * ((u1.size + 7) // 8)).reshape(-1, 8)
    u2 = np.random.default_rng(0).random(u1.shape, dtype=np.float32)
    d = np.concatenate([u1, u2], 1).astype(np.float32)
    radius = np.sqrt(m.log256(np.float32(1) - d[:, :8]) * np.float32(-2))
    s, c = m.sincos256(d[:, 8:] * np.float32(2.0 * np.pi))
    want = np.concatenate([radius * c, radius * s], 1)
    assert box_muller.normal16(d, 0.0, 1.0).tobytes() == want.tobytes()


# ---------------------------------------------------------------------------- depthwise conv
@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_conv_gradients_match_torch(stride):
    """groups == channels (one output channel per group: the column gradient an outer
    product, now a broadcast product), and its transposed twin: values and gradients."""
    tx, sx = _pair((2, 6, 9, 8), 0)
    tw, sw = _pair((6, 1, 3, 3), 1)
    ty = torch.nn.functional.conv2d(tx, tw, padding=1, stride=stride, groups=6)
    sy = sf.nn.functional.conv2d(sx, sw, padding=1, stride=stride, groups=6)
    _close(sy, ty, 1e-5)
    tg, sg = _pair(tuple(ty.shape), 2, grad=False)
    ty.backward(tg)
    sy.backward(sg)
    _close(sx.grad, tx.grad, 1e-5)
    _close(sw.grad, tw.grad, 1e-4)
    # conv_transpose with one input channel per group: the forward's product is the outer one
    tw2, sw2 = _pair((6, 2, 3, 3), 3)
    ty2 = torch.nn.functional.conv_transpose2d(tx, tw2, stride=stride, groups=6)
    sy2 = sf.nn.functional.conv_transpose2d(sx, sw2, stride=stride, groups=6)
    _close(sy2, ty2, 1e-5)
    ty2.sum().backward()
    sy2.sum().backward()
    _close(sw2.grad, tw2.grad, 1e-4)


def test_matmul_k_is_the_gemm_bit_for_bit():
    """The inner-dimension-1 product gives the GEMM's bits (one product per element)."""
    from shardflow.ops.conv import _matmul_k

    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        a = rng.standard_normal((4, 9, 1)).astype(dt)
        b = rng.standard_normal((4, 1, 300)).astype(dt)
        got, want = _matmul_k(a, b), np.matmul(a, b)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        got = _matmul_k(a.reshape(4, 1, 9).transpose(0, 2, 1), b)  # a transposed view
        assert got.flags.c_contiguous and np.array_equal(got, want)


# ---------------------------------------------------------------------------- unique
_UNIQUE_CASES = {
    "dense int64": lambda r: r.integers(0, 1000, 5000),
    "int8 2-D negative": lambda r: r.integers(-5, 5, (30, 7)).astype(np.int8),
    "int8 full range": lambda r: np.array([-128, 127, 0, 127], np.int8),
    "sparse int64": lambda r: r.integers(0, 2**40, 1000),
    "int64 extremes": lambda r: np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max, 0]),
    "uint8": lambda r: r.integers(0, 255, 500).astype(np.uint8),
    "int16 2-D": lambda r: r.integers(0, 3, (4, 5)).astype(np.int16),
    "empty": lambda r: np.array([], np.int64),
    "float": lambda r: r.standard_normal(50).round(0).astype(np.float32),
    "bool": lambda r: np.array([True, False, True]),
    # torch keeps every NaN a distinct value (NumPy's unique merged them: a silent difference)
    "float NaNs": lambda r: np.where(r.random(40) < 0.3, np.nan, r.integers(0, 4, 40)).astype(np.float32),
    "float64 2-D NaNs and infs": lambda r: np.array([[np.nan, np.inf, 1.0], [np.nan, -np.inf, np.inf]]),
}


@pytest.mark.parametrize("case", list(_UNIQUE_CASES))
def test_unique_outputs_match_torch(case):
    """Each combination of inverse/counts: values, dtypes and shapes as torch's (the counted
    integer path, NumPy's sort for the rest)."""
    a = _UNIQUE_CASES[case](np.random.default_rng(0))
    for inverse in (False, True):
        for counts in (False, True):
            t = torch.unique(torch.tensor(a), return_inverse=inverse, return_counts=counts)
            s = sf.unique(sf.tensor(a), return_inverse=inverse, return_counts=counts)
            t, s = (t if isinstance(t, tuple) else (t,)), (s if isinstance(s, tuple) else (s,))
            assert len(s) == len(t)
            for k, (x, y) in enumerate(zip(s, t)):
                assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]
                assert tuple(x.shape) == tuple(y.shape)
                if inverse and k == 1 and np.isnan(a).any():
                    # which NaN slot each NaN maps to is the sort's business (torch's is not
                    # stable); each NaN takes its own slot and the values rebuild the input
                    x, v = x.numpy(), s[0].numpy()
                    np.testing.assert_array_equal(v[x], a)
                    assert sorted(x[np.isnan(a)].tolist()) == list(np.flatnonzero(np.isnan(v)))
                    continue
                np.testing.assert_array_equal(x.numpy(), y.numpy())


# ---------------------------------------------------------------------------- adaptive_max_pool
def _adaptive_max_per_window(x, d, osize):
    """The code the separable pass replaced: one flattened argmax per output position."""
    import itertools

    from shardflow.ops.pool import _bins

    spatial, lead = x.shape[-d:], x.shape[:-d]
    bins = [_bins(s, o) for s, o in zip(spatial, osize)]
    out, idx = np.empty(lead + osize, x.dtype), np.empty(lead + osize, np.int64)
    for pos in itertools.product(*(range(o) for o in osize)):
        starts = [int(b[0][p]) for b, p in zip(bins, pos)]
        ends = [int(b[1][p]) for b, p in zip(bins, pos)]
        win = x[(Ellipsis,) + tuple(slice(s, e) for s, e in zip(starts, ends))]
        flatw = win.reshape(lead + (-1,))
        a = np.argmax(flatw, axis=-1)
        out[(Ellipsis,) + pos] = np.take_along_axis(flatw, a[..., None], -1)[..., 0]
        local = np.unravel_index(a, win.shape[-d:])
        flat = np.zeros(a.shape, np.int64)
        for i in range(d):
            flat = flat * spatial[i] + (local[i] + starts[i])
        idx[(Ellipsis,) + pos] = flat
    return out, idx


@pytest.mark.parametrize("d, shape, osize", [(1, (2, 3, 11), (4,)), (2, (2, 3, 13, 10), (5, 3)),
                                             (2, (3, 7, 6), (7, 9)), (3, (1, 2, 5, 6, 7), (2, 3, 4))])
def test_adaptive_max_pool_separable_same_bits_and_indices(d, shape, osize):
    """Ties (values rounded to a few levels) and NaNs: the first maximum in each window's
    row-major order, values and indices as the per-window code; the gradient as torch's."""
    from shardflow.ops.pool import _adaptive_argmax, _bins

    rng = np.random.default_rng(d)
    x = rng.integers(0, 3, shape).astype(np.float32)
    x.reshape(-1)[rng.integers(0, x.size, 3)] = np.nan
    bins = [_bins(s, o) for s, o in zip(shape[-d:], osize)]
    got_v, got_i = _adaptive_argmax(x, d, bins)
    want_v, want_i = _adaptive_max_per_window(x, d, osize)
    assert got_v.tobytes() == want_v.tobytes() and np.array_equal(got_i, want_i)
    # distinct values: the same as torch's, with the gradient
    xs = rng.permutation(x.size).reshape(shape).astype(np.float32)
    tx, sx = torch.tensor(xs, requires_grad=True), sf.tensor(xs, requires_grad=True)
    pool = f"adaptive_max_pool{d}d"
    ty, ti = getattr(torch.nn.functional, pool)(tx, osize, return_indices=True)
    sy, si = getattr(sf.nn.functional, pool)(sx, osize, return_indices=True)
    np.testing.assert_array_equal(sy.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(si.numpy(), ti.numpy())
    g = rng.standard_normal(ty.shape).astype(np.float32)
    ty.backward(torch.tensor(g))
    sy.backward(sf.tensor(g))
    _close(sx.grad, tx.grad, 1e-6)  # (overlapping windows' sums: float64 here, float32 in torch)


# ---------------------------------------------------------------------------- reflect/replicate/circular pad
@pytest.mark.parametrize("mode, pads", [("reflect", (2, 2, 2, 2)), ("reflect", (2, 2, 1, 2)),
                                        ("replicate", (3, 1, 0, 2)), ("replicate", (40, 2, 0, 0)),
                                        ("circular", (3, 3, 1, 0))])
def test_index_pad_backward_is_the_scatter_add_bit_for_bit(mode, pads):
    """The backward's slice additions per run of the index map give np.add.at's sums (index
    order, from 0: signed zeros too), on a 3-wide dim where a position gets three terms; and
    torch's gradient. (40 replicated: the scatter-add route, same bits.)"""
    from shardflow.ops.shape import _pad_map

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 3, 5)).astype(np.float32)
    tx, sx = torch.tensor(x, requires_grad=True), sf.tensor(x, requires_grad=True)
    ty = torch.nn.functional.pad(tx, pads, mode=mode)
    sy = sf.nn.functional.pad(sx, pads, mode=mode)
    np.testing.assert_array_equal(sy.detach().numpy(), ty.detach().numpy())
    g = (rng.standard_normal(ty.shape) * 1e3).astype(np.float32)
    g.reshape(-1)[::7] = -0.0
    ty.backward(torch.tensor(g))
    sy.backward(sf.tensor(g))
    _close(sx.grad, tx.grad, 1e-3)
    want = g
    for d, (lo, hi) in ((3, pads[:2]), (2, pads[2:])):  # PadIndex's reversed map order
        if not (lo or hi):
            continue
        idx = _pad_map(mode, x.shape[d], lo, hi, d)
        shape = list(want.shape)
        shape[d] = x.shape[d]
        out = np.zeros(shape, np.float32)
        np.add.at(np.moveaxis(out, d, 0), idx, np.moveaxis(want, d, 0))
        want = out
    assert sx.grad.numpy().tobytes() == want.tobytes()


# ---------------------------------------------------------------------------- silu
@pytest.mark.parametrize("shape", [(), (7,), (64, 33)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_silu_in_place_steps_same_bits(shape, dtype):
    """Fewer temporaries, the same operations: bits as the formula before (x / (1 + exp(-x));
    (g * s) * (1 + x (1 - s))), values and gradients close to torch's."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 30).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    sx = sf.tensor(x, dtype=getattr(sf, dtype), requires_grad=True)
    sy = sf.nn.functional.silu(sx)
    sy.backward(sf.tensor(g, dtype=getattr(sf, dtype)))
    op = np.float64 if dtype == "float64" else np.float32

    def host(t):
        return t.detach().to(sf.float64 if dtype == "float64" else sf.float32).numpy()

    w, gw = host(sx), host(sf.tensor(g, dtype=getattr(sf, dtype)))
    with np.errstate(over="ignore"):
        d = np.exp(-w) + op(1)
    s = op(1) / d
    want_y, want_g = (w / d), (gw * s) * ((op(1) - s) * w + op(1))
    if dtype == "bfloat16":  # one rounding at the end (torch's opmath)
        want_y, want_g = (sf.tensor(np.asarray(v, np.float32)).to(sf.bfloat16).float().numpy() for v in (want_y, want_g))
    np.testing.assert_array_equal(host(sy), np.asarray(want_y, op))
    np.testing.assert_array_equal(host(sx.grad), np.asarray(want_g, op))
    tx = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    ty = torch.nn.functional.silu(tx)
    ty.backward(torch.tensor(g, dtype=getattr(torch, dtype)))
    tol = 1e-2 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(sy.detach().float().numpy(), ty.detach().float().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(sx.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("pad, dil", [(1, 1), (2, 2), (0, 1)])
def test_depthwise_col2im_kernel_same_bits_as_numpy_path(monkeypatch, pad, dil):
    """The depthwise input gradient formed inside col2im (kernels on) is the NumPy path's
    (the product buffer, then col2im's adds in kernel-position order) bit for bit."""
    from shardflow import kernels

    if not kernels.available():
        pytest.skip("numba not installed")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    w = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    g = (rng.standard_normal((2, 5, 9 + 2 * pad - 2 * dil, 11 + 2 * pad - 2 * dil)) * 1e3).astype(np.float32)

    def grads():
        sx, sw = sf.tensor(x, requires_grad=True), sf.tensor(w, requires_grad=True)
        sf.nn.functional.conv2d(sx, sw, padding=pad, dilation=dil, groups=5).backward(sf.tensor(g))
        return sx.grad.numpy(), sw.grad.numpy()

    fast = grads()
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numpy")
    slow = grads()
    assert fast[0].tobytes() == slow[0].tobytes()
    np.testing.assert_allclose(fast[1], slow[1], rtol=1e-5, atol=1e-3)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    torch.nn.functional.conv2d(tx, tw, padding=pad, dilation=dil, groups=5).backward(torch.tensor(g))
    np.testing.assert_allclose(fast[0], tx.grad.numpy(), rtol=1e-4, atol=1e-2)


def test_fancy_index_backward_empty_index():
    """An empty row index (x[[]], x[range(0, 0)]) on the row route: a zero gradient."""
    from shardflow.backend.flat_at import flat_at

    sx = sf.ones(4, 3, requires_grad=True)
    sx[sf.tensor(np.array([], np.int64))].sum().backward()
    assert sx.grad.shape == (4, 3) and not sx.grad.numpy().any()
    t = np.zeros((4, 3), np.float32)
    flat_at(np.add, t, (np.array([], np.intp), Ellipsis), np.zeros((0, 3), np.float32))
    assert not t.any()
