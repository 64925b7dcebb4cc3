"""The fast paths of the ops that were 5-15x slower than PyTorch (docs/BENCH.md, "Slow ops").

Each fast path must give what the old code gave, bit for bit: the reference here is the
plain NumPy formulation it replaced (``np.add.at`` with the original index) or PyTorch.
Speed is not tested (it lives in docs/BENCH.md).
"""

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.backend.flat_at import flat_at


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


# ---------------------------------------------------------------------------- flat_at
@pytest.mark.parametrize("seed", range(40))
def test_flat_at_matches_ufunc_at_bit_for_bit(seed):
    """Random targets, index tuples (negative entries, broadcasting, fewer arrays than dims),
    dtypes and layouts: the flat route forms every sum in np.add.at's order."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, 4))
    shape = tuple(int(s) for s in rng.integers(1, 6, nd))
    k = int(rng.integers(1, nd + 1))
    bshape = tuple(int(s) for s in rng.integers(1, 6, int(rng.integers(1, 3))))
    index = tuple(rng.integers(-shape[d], shape[d], bshape) for d in range(k))
    if k == 1 and seed % 2:
        index = index[0]
    dtype = [np.float32, np.float64, np.int32][seed % 3]
    values = (rng.standard_normal(bshape + shape[k:]) * 1e3).astype(dtype)
    if seed % 4 == 1:
        values = values[..., :1]  # broadcast along the trailing dims
    for ufunc in (np.add, np.maximum):
        start = (rng.standard_normal(shape) * 100).astype(dtype)
        if seed % 5 == 0:
            start = np.asfortranarray(start)  # a non-contiguous target: copied in and out
        want, got = start.copy(), start.copy(order="K")
        ufunc.at(want, index, values)
        flat_at(ufunc, got, index, values)
        _same_bits(want, got)


def test_flat_at_many_repeats_float32_order():
    """Many float32 values into few rows: a running sum in index order, not a pairwise or
    float64 one (the two differ in the last bits here)."""
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 3, 5000)
    vals = rng.standard_normal((5000, 4)).astype(np.float32) * np.float32(1e4)
    want = np.zeros((3, 4), np.float32)
    np.add.at(want, idx, vals)
    got = np.zeros((3, 4), np.float32)
    flat_at(np.add, got, idx, vals)
    _same_bits(want, got)
    wide = np.zeros((3, 4))
    np.add.at(wide, idx, vals.astype(np.float64))
    assert not np.array_equal(wide.astype(np.float32), want)  # the test can tell the orders apart


@pytest.mark.parametrize("index", [
    (np.array([3]),),  # out of range
    (np.array([0, 1]), np.array([0, 1, 2])),  # index arrays that do not broadcast
    (slice(None), np.array([0, 2])),  # a slice before an array: left to ufunc.at
    (np.array([True, False, True]),),  # a boolean mask: left to ufunc.at
])
def test_flat_at_errors_and_other_indexes_stay_numpys(index):
    values = np.ones(2, np.float32)
    outcomes = []
    for f in (lambda t: np.add.at(t, index, values), lambda t: flat_at(np.add, t, index, values)):
        t = np.zeros((3, 3), np.float32)
        try:
            f(t)
            outcomes.append(t.tobytes())
        except Exception as e:  # noqa: BLE001 - the two must raise the same
            outcomes.append((type(e), str(e)))
    assert outcomes[0] == outcomes[1]


def test_flat_at_python_number_is_weak():
    """A Python float added to float32 is cast to float32 first (NEP 50), as ufunc.at does."""
    want, got = np.zeros(3, np.float32), np.zeros(3, np.float32)
    np.add.at(want, np.array([0, 0, 1]), 0.1)
    flat_at(np.add, got, np.array([0, 0, 1]), 0.1)
    _same_bits(want, got)


# ---------------------------------------------------------------------------- grid_sample
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_dense_grid_matches_torch(mode, padding_mode):
    """More samples than pixels (each pixel gets many corner gradients), points outside."""
    g = np.random.default_rng(1)
    x = g.standard_normal((2, 3, 5, 6)).astype(np.float32)
    grid = (g.random((2, 9, 11, 2)) * 2.4 - 1.2).astype(np.float32)
    outs = []
    for m in (torch, sf):
        xt, gt = m.tensor(x, requires_grad=True), m.tensor(grid, requires_grad=True)
        f = m.nn.functional.grid_sample
        y = f(xt, gt, mode=mode, padding_mode=padding_mode, align_corners=False)
        (y * m.arange(y.numel(), dtype=y.dtype).reshape(y.shape).cos()).sum().backward()
        outs.append([y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()])
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- randperm
@pytest.mark.parametrize("n", [(1 << 14) + 3, 100_003])
def test_randperm_kernel_shuffle_is_torchs_and_the_numpy_paths(monkeypatch, n):
    """The compiled shuffle (from 2^14 elements) gives torch's permutation and the NumPy
    path's, and leaves the generator where torch's is (the next draw agrees too)."""
    pytest.importorskip("numba")
    want = torch.randperm(n, generator=torch.Generator().manual_seed(7))
    want_next = torch.Generator().manual_seed(7)
    torch.randperm(n, generator=want_next)
    got = {}
    for mode in ("numba", "numpy"):
        monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
        g = sf.Generator().manual_seed(7)
        got[mode] = (sf.randperm(n, generator=g).numpy(), sf.randint(0, 1000, (5,), generator=g).numpy())
    np.testing.assert_array_equal(got["numba"][0], want.numpy())
    np.testing.assert_array_equal(got["numpy"][0], want.numpy())
    np.testing.assert_array_equal(got["numba"][1], torch.randint(0, 1000, (5,), generator=want_next).numpy())
    np.testing.assert_array_equal(got["numpy"][1], got["numba"][1])


# ---------------------------------------------------------------------------- row scatters
def _run_both_paths(monkeypatch, fn):
    """``fn()`` (arrays) with the kernels on and off: must agree bit for bit."""
    pytest.importorskip("numba")
    got = []
    for mode in ("numba", "numpy"):
        monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
        got.append(fn())
    for a, b in zip(*got, strict=True):
        _same_bits(a, b)
    return got[0]


def _fwd_bwd(m, make):
    """Output and leaf gradients of ``make(m)`` -> (out, leaves), weighted sum backward."""
    out, leaves = make(m)
    w = m.arange(out.numel(), dtype=out.dtype).reshape(out.shape).sin()
    (out * w).sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in leaves]


def _index_add(dim, dtype, alpha):
    def make(m):
        g = np.random.default_rng(3)
        t = m.tensor(g.standard_normal((40, 24, 3)).astype(dtype), requires_grad=True)
        idx = m.tensor(g.integers(-t.shape[dim], t.shape[dim], 500) % t.shape[dim])
        shape = list(t.shape)
        shape[dim] = 500
        src = m.tensor((g.standard_normal(shape) * 1e3).astype(dtype), requires_grad=True)
        return t.index_add(dim, idx, src, alpha=alpha), [t, src]
    return make


def _index_select(dim, dtype):
    def make(m):
        g = np.random.default_rng(4)
        x = m.tensor(g.standard_normal((40, 24, 3)).astype(dtype), requires_grad=True)
        return x.index_select(dim, m.tensor(g.integers(0, x.shape[dim], 300))), [x]
    return make


def _grid_sample(mode, dtype):
    def make(m):
        g = np.random.default_rng(5)
        x = m.tensor(g.standard_normal((2, 3, 5, 6)).astype(dtype), requires_grad=True)
        grid = m.tensor((g.random((2, 9, 11, 2)) * 2.4 - 1.2).astype(dtype), requires_grad=True)
        return m.nn.functional.grid_sample(x, grid, mode=mode, align_corners=False), [x, grid]
    return make


ROW_SCATTERS = {
    "index_add dim0": _index_add(0, np.float32, 1),
    "index_add dim1 alpha f64": _index_add(1, np.float64, 2.5),
    "index_select dim0": _index_select(0, np.float32),
    "index_select dim2 f64": _index_select(2, np.float64),
    "grid_sample bilinear": _grid_sample("bilinear", np.float32),
    "grid_sample nearest f64": _grid_sample("nearest", np.float64),
}


@pytest.mark.parametrize("name", list(ROW_SCATTERS))
def test_row_scatter_kernel_is_the_numpy_path_and_matches_torch(monkeypatch, name):
    """index_add's forward and index_select's / grid_sample's backward add rows in index
    order: the row kernel, NumPy's flat add.at and torch agree."""
    make = ROW_SCATTERS[name]
    got = _run_both_paths(monkeypatch, lambda: _fwd_bwd(sf, make))
    want = _fwd_bwd(torch, make)
    tol = dict(rtol=1e-5, atol=1e-3) if got[0].dtype == np.float32 else dict(rtol=1e-12, atol=1e-9)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, **tol)


def test_index_add_into_few_rows_sums_in_index_order_as_torch(monkeypatch):
    """10_000 float32 rows into 3: a running float32 sum in index order, torch's order too."""
    g = np.random.default_rng(6)
    idx = g.integers(0, 3, 10_000)
    src = (g.standard_normal((10_000, 4)) * 1e4).astype(np.float32)
    want = torch.zeros(3, 4).index_add(0, torch.tensor(idx), torch.tensor(src)).numpy()
    got = _run_both_paths(monkeypatch, lambda: [sf.zeros(3, 4).index_add(0, sf.tensor(idx), sf.tensor(src)).numpy()])
    ref = np.zeros((3, 4), np.float32)
    np.add.at(ref, idx, src)
    _same_bits(got[0], ref)
    np.testing.assert_allclose(got[0], want, rtol=1e-4)


def _scatter_add(dim, dtype, full):
    def make(m):
        g = np.random.default_rng(7)
        t = m.tensor(g.standard_normal((12, 30)).astype(dtype), requires_grad=True)
        ishape = (12, 30) if full else (9, 20)  # an index (and src) smaller than the target
        idx = m.tensor(g.integers(0, t.shape[dim], ishape))
        src = m.tensor((g.standard_normal(ishape) * 1e3).astype(dtype), requires_grad=True)
        return t.scatter_add(dim, idx, src), [t, src]
    return make


ROW_SCATTERS.update({
    "scatter_add dim1": _scatter_add(1, np.float32, True),
    "scatter_add dim0 small f64": _scatter_add(0, np.float64, False),
})


@pytest.mark.parametrize("name", [n for n in ROW_SCATTERS if n.startswith("scatter_add")])
def test_scatter_add_kernel_is_the_numpy_path_and_matches_torch(monkeypatch, name):
    """scatter_add's element-wise index runs the one-column loop; its src gradient is a plain
    gather when the index covers src (a src larger than the index: the next test)."""
    test_row_scatter_kernel_is_the_numpy_path_and_matches_torch(monkeypatch, name)


def test_scatter_add_src_larger_than_index_gets_zero_padded_gradient():
    """torch's forward takes a src larger than the index (its backward refuses it): the part of
    src the index reaches gets g at the scattered positions, the rest zero."""
    g = np.random.default_rng(8)
    idx = g.integers(0, 12, (9, 20))
    src = sf.tensor(g.standard_normal((12, 30)).astype(np.float32), requires_grad=True)
    w = g.standard_normal((12, 30)).astype(np.float32)
    out = sf.zeros(12, 30).scatter_add(0, sf.tensor(idx), src)
    (out * sf.tensor(w)).sum().backward()
    want = np.zeros((12, 30), np.float32)
    want[:9, :20] = w[idx, np.arange(20)]
    _same_bits(src.grad.numpy(), want)


# ---------------------------------------------------------------------------- ctc_loss
@pytest.mark.parametrize("reduction,zero_infinity,impossible", [
    ("mean", False, False), ("sum", False, False), ("none", True, True), ("mean", True, True)])
def test_ctc_loss_stepped_recursions_match_torch(reduction, zero_infinity, impossible):
    """alpha and beta stepped together (beta reversed in time and states): varied input and
    target lengths, repeated labels (no skip), an empty target, maybe an impossible alignment
    (with zero_infinity, so that the gradient is finite)."""
    g = np.random.default_rng(9)
    T, N, C, S = 30, 6, 6, 8
    logits = g.standard_normal((T, N, C)).astype(np.float32)
    tg = g.integers(1, C, (N, S))
    tg[:, 1::2] = tg[:, 0::2]  # repeated labels
    il = g.integers(T // 2, T + 1, N)
    tl = g.integers(0, S + 1, N)
    tl[1] = 0
    if impossible:
        il[0], tl[0] = 3, S
    outs = []
    for m in (torch, sf):
        x = m.tensor(logits, requires_grad=True)
        loss = m.nn.functional.ctc_loss(x.log_softmax(2), m.tensor(tg), m.tensor(il), m.tensor(tl),
                                        reduction=reduction, zero_infinity=zero_infinity)
        (loss * m.arange(1, loss.numel() + 1, dtype=loss.dtype).reshape(loss.shape)).sum().backward()
        outs.append((loss.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- cumsum
@pytest.mark.parametrize("shape,dim", [((17, 1000), 1), ((6, 40, 5), 1), ((40, 7), 0), ((3, 1), 1), ((9,), 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cumsum_scan_kernel_is_numpys_running_sum(monkeypatch, shape, dim, dtype):
    """Forward and the reversed-cumsum backward: the kernel and NumPy's cumsum agree bit for
    bit (an inf makes NaNs downstream, in both), and torch agrees in value."""
    g = np.random.default_rng(10)
    a = (g.standard_normal(shape) * 1e3).astype(dtype)
    w = g.standard_normal(shape).astype(dtype)
    if a.size > 5:
        a.flat[5] = np.inf

    def run(m):
        x = m.tensor(a, requires_grad=True)
        y = m.cumsum(x, dim)
        (y * m.tensor(w)).sum().backward()
        return [y.detach().numpy(), x.grad.numpy()]

    got = _run_both_paths(monkeypatch, lambda: run(sf))
    want = run(torch)
    _same_bits(got[0], np.cumsum(a, dim))
    # float32 running sums of 1e3-sized values over 1000 steps drift ~0.03 from torch's sums
    atol = 0.1 if dtype == np.float32 else 1e-8
    for a_, b_ in zip(got, want, strict=True):
        np.testing.assert_allclose(a_, b_, rtol=1e-5, atol=atol)


# ---------------------------------------------------------------------------- topk
def _topk_input(kind, shape, dtype, g):
    a = g.standard_normal(shape)
    if kind == "ties":
        a = g.integers(0, 20, shape).astype(float)
    elif kind == "nan":
        a.flat[::17] = np.nan
    elif kind == "signed zeros":
        a.flat[::5], a.flat[1::5] = 0.0, -0.0
    elif kind == "inf":
        a.flat[::7], a.flat[3::11] = np.inf, -np.inf
    return a.astype(dtype)


@pytest.mark.parametrize("kind", ["distinct", "ties", "nan", "signed zeros", "inf"])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_one_pass_kernel_is_the_argpartition_path(monkeypatch, kind, dim, largest):
    """The kernel answers rows with a unique answer and hands ties/NaN back to argpartition:
    values, indices and the gradient are the NumPy path's bit for bit."""
    g = np.random.default_rng(11)
    a = _topk_input(kind, (40, 90), np.float32 if largest else np.float64, g)

    def run():
        x = sf.tensor(a, requires_grad=True)
        v, i = sf.topk(x, 9, dim, largest=largest)
        (v * sf.arange(v.numel(), dtype=v.dtype).reshape(v.shape)).sum().backward()
        return [v.detach().numpy(), i.numpy(), x.grad.numpy()]

    _run_both_paths(monkeypatch, run)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_kernel_matches_torch(monkeypatch, largest):
    pytest.importorskip("numba")
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numba")
    a = np.random.default_rng(12).standard_normal((3, 50, 64)).astype(np.float32)
    for dim in (0, 1, 2):
        k = a.shape[dim] // 4 - 1 if a.shape[dim] > 4 else 1
        want = torch.topk(torch.tensor(a), k, dim, largest=largest)
        got = sf.topk(sf.tensor(a), k, dim, largest=largest)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        _same_bits(got.values.numpy(), want.values.numpy())


# ---------------------------------------------------------------------------- unfold / stft
@pytest.mark.parametrize("shape,dim,size,step", [
    ((3, 50), 1, 10, 3), ((30, 4, 5), 0, 7, 2), ((4, 40, 3), 1, 5, 8), ((2, 33), 1, 33, 1), ((2, 17, 3), 1, 4, 4)])
def test_unfold_backward_window_loop_matches_offset_loop_and_torch(shape, dim, size, step):
    """Fewer windows than offsets: whole windows added last first, so each position sums its
    terms in increasing offset order, exactly as the per-offset loop (the reference here)."""
    g = np.random.default_rng(13)
    a = g.standard_normal(shape).astype(np.float32)
    x = sf.tensor(a, requires_grad=True)
    y = x.unfold(dim, size, step)
    w = (g.standard_normal(tuple(y.shape)) * 1e3).astype(np.float32)
    (y * sf.tensor(w)).sum().backward()
    ref = np.zeros(shape, np.float32)
    nw = y.shape[dim]
    pre = (slice(None),) * dim
    for k in range(size):
        ref[pre + (slice(k, k + step * (nw - 1) + 1, step),)] += w[..., k]
    _same_bits(x.grad.numpy(), ref)
    xt = torch.tensor(a, requires_grad=True)
    (xt.unfold(dim, size, step) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-3)


def test_stft_gradient_matches_torch():
    g = np.random.default_rng(14)
    a = g.standard_normal((2, 3000)).astype(np.float32)
    grads = []
    for m in (torch, sf):
        x = m.tensor(a, requires_grad=True)
        m.stft(x, 400, 160, window=m.hann_window(400), return_complex=True).abs().sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("name", ["rfft", "ifft"])
@pytest.mark.parametrize("norm", ["backward", "forward", "ortho"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [400, 401, 7])
def test_unscaled_transforms_through_scipy_are_numpys_bits(name, norm, dtype, n):
    """Where NumPy's scale is the int 1 it transforms in double precision (slowly); the cast-
    once SciPy route must give its result bit for bit, and the other norms stay NumPy's."""
    from shardflow.ops.fft_ops import _unscaled_double

    g = np.random.default_rng(15)
    a = g.standard_normal((3, 5, n)).astype(dtype)
    if name == "ifft":
        a = (a + 1j * g.standard_normal(a.shape)).astype(np.result_type(dtype, np.complex64))
    for axis in (2, 1):
        want = getattr(np.fft, name)(a, axis=axis, norm=norm)
        _same_bits(_unscaled_double(np, name, a, axis, norm), want)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_backward_on_moved_rows_is_the_numpy_path_and_torch(monkeypatch, mode):
    """reflect/replicate/circular pad's backward scatter-adds with the padded dim moved first
    (contiguous rows): the kernel and NumPy's add.at agree bit for bit, torch in value."""
    g = np.random.default_rng(16)
    a = g.standard_normal((2, 3, 9, 8)).astype(np.float32)
    w = g.standard_normal((2, 3, 14, 13)).astype(np.float32) * 1e3

    def run(m):
        x = m.tensor(a, requires_grad=True)
        y = m.nn.functional.pad(x, (2, 3, 4, 1), mode=mode)
        (y * m.tensor(w)).sum().backward()
        return [y.detach().numpy(), x.grad.numpy()]

    got = _run_both_paths(monkeypatch, lambda: run(sf))
    want = run(torch)
    for a_, b_ in zip(got, want, strict=True):
        np.testing.assert_allclose(a_, b_, rtol=1e-5, atol=1e-2)
