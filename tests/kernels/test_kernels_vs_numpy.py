"""Every fused kernel against the NumPy path it replaces (``SHARDFLOW_KERNELS=numpy``), in
float32 and float64, forward and backward, with row counts that leave each thread a ragged
share. The op specs (``tests/ops/specs/kernels.py``, ``blocked.py``) compare the same ops with
PyTorch; here the two shardflow paths are compared with each other, and the switch, the
fallback for arrays the kernels do not take, and the compile report are checked."""

import os
import subprocess
import sys

import numpy as np
import pytest

import shardflow
import shardflow.nn.functional as F
from shardflow import kernels, optim

pytest.importorskip("numba")

TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}
ROWS = 517


def _ce(x):
    t = np.random.default_rng(5).integers(0, x.shape[-1], x.shape[0])
    t[::5] = -100
    return F.cross_entropy(x, shardflow.tensor(t))


def _sdpa(x):
    q = x[..., :16]
    return F.scaled_dot_product_attention(q, q * 0.5, q.flip(-1), is_causal=True)


def _sdpa_qkv(x):
    """GPT-mini's layout: heads are strided views of one (B, T, 3C) projection."""
    B, T, C = x.shape[0], x.shape[1], x.shape[2] // 3
    q, k, v = (t.reshape(B, T, 2, C // 2).transpose(1, 2) for t in x.split(C, dim=2))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


_IDS = shardflow.tensor(np.random.default_rng(4).integers(0, 37, (9, 113)))

# name -> (function of one input, input shape)
CASES = {
    "layer_norm": (lambda x: F.layer_norm(x, (x.shape[-1],), x[0] * 0 + 1.5, x[1] * 0 + 0.1), (ROWS, 48)),
    "softmax": (lambda x: F.softmax(x * 3, dim=-1), (ROWS, 33)),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), (ROWS, 33)),
    "cross_entropy": (_ce, (ROWS, 33)),
    "gelu": (lambda x: F.gelu(x), (ROWS, 65)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), (ROWS, 65)),
    "sdpa_causal": (_sdpa, (3, 4, 70, 16)),
    "sdpa_qkv_split": (_sdpa_qkv, (3, 70, 48)),
    "embedding": (lambda w: F.embedding(_IDS, w), (37, 70)),
}


def _run(monkeypatch, mode, fn, x0):
    monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
    x = shardflow.tensor(x0, requires_grad=True)
    y = fn(x)
    op, fused = type(y.grad_fn).__name__, getattr(y.grad_fn, "fused", None)  # before backward frees it
    g = np.random.default_rng(2).standard_normal(y.shape).astype(x0.dtype)
    y.backward(shardflow.tensor(g))
    return y.detach().numpy(), x.grad.numpy(), op, fused


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_matches_numpy_path(monkeypatch, name, dtype):
    fn, shape = CASES[name]
    x0 = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    y_k, g_k, op_k, fused_k = _run(monkeypatch, "numba", fn, x0)
    y_n, g_n, op_n, fused_n = _run(monkeypatch, "numpy", fn, x0)
    assert op_k == op_n and fused_k is True and fused_n is False  # the switch picked each path
    np.testing.assert_allclose(y_k, y_n, **TOL[dtype])
    np.testing.assert_allclose(g_k, g_n, **TOL[dtype])


OPTIMS = {
    "adam": lambda p: optim.Adam(p, lr=0.01),
    "adam_l2_amsgrad_max": lambda p: optim.Adam(p, lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True),
    "adamw": lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "sgd": lambda p: optim.SGD(p, lr=0.1),
    "sgd_momentum_wd": lambda p: optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01, dampening=0.2),
    "sgd_nesterov_max": lambda p: optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, maximize=True),
}


def _train(monkeypatch, mode, make, dtype):
    monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
    rng = np.random.default_rng(0)
    ps = [shardflow.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
          for s in [(ROWS, 129), (7,)]]
    opt = make(ps)
    for _ in range(4):
        for p in ps:
            p.grad = shardflow.tensor(rng.standard_normal(p.shape).astype(dtype))
        opt.step()
    return [p.detach().numpy() for p in ps]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(OPTIMS))
def test_optimizer_kernel_matches_numpy_path(monkeypatch, name, dtype):
    a = _train(monkeypatch, "numba", OPTIMS[name], dtype)
    b = _train(monkeypatch, "numpy", OPTIMS[name], dtype)
    start = _train(monkeypatch, "numpy", lambda p: optim.SGD(p, lr=0.0), dtype)
    for pa, pb, p0 in zip(a, b, start):
        assert not np.allclose(pa, p0)  # the step moved the parameters
        np.testing.assert_allclose(pa, pb, **TOL[dtype])


def test_usable_takes_only_contiguous_numpy_float32_float64(monkeypatch):
    monkeypatch.setenv("SHARDFLOW_KERNELS", "auto")
    a = np.zeros((4, 6), np.float32)
    assert kernels.usable(a) and kernels.usable(a.astype(np.float64))
    assert not kernels.usable(a[:, ::2])  # strided
    assert not kernels.usable(a.astype(np.float16))
    assert not kernels.usable(a.astype(np.int64))
    assert not kernels.usable(a, a.astype(np.float64))  # mixed dtypes
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numpy")
    assert not kernels.usable(a)


def test_strided_input_falls_back_with_same_result(monkeypatch):
    x0 = np.random.default_rng(1).standard_normal((64, 80)).astype(np.float32)
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numba")
    y = F.softmax(shardflow.tensor(x0)[:, ::2], dim=-1)
    assert y.grad_fn is None or getattr(y.grad_fn, "fused", False) is False
    x = x0[:, ::2]
    ref = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), ref / ref.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_bad_mode_says_what_is_allowed(monkeypatch):
    monkeypatch.setenv("SHARDFLOW_KERNELS", "fast")
    with pytest.raises(ValueError, match="auto, numba, numpy"):
        kernels.enabled()


def test_compile_report_lists_compiled_kernels(monkeypatch):
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numba")
    F.gelu(shardflow.randn(8, 8))
    rows = [r for r in kernels.compile_report() if r["kernel"] == "gelu._fwd32"]
    assert rows and rows[0]["seconds"] > 0 and rows[0]["source"] in ("compiled", "disk cache")
    assert "gelu._fwd32" in kernels.format_compile_report()


_NO_NUMBA = """
import sys
sys.modules['numba'] = None  # as if numba were not installed
import numpy as np, shardflow, shardflow.nn.functional as F
x = shardflow.tensor(np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
print(F.softmax(x, dim=-1).grad_fn.fused, float(F.softmax(x, dim=-1).sum()))
"""


def test_without_numba_auto_falls_back_and_numba_mode_says_how_to_install():
    env = dict(os.environ, SHARDFLOW_KERNELS="auto")
    out = subprocess.run([sys.executable, "-c", _NO_NUMBA], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    fused, total = out.stdout.split()
    assert fused == "False" and abs(float(total) - 3.0) < 1e-5
    env["SHARDFLOW_KERNELS"] = "numba"
    out = subprocess.run([sys.executable, "-c", _NO_NUMBA], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "pip install" in out.stderr and "SHARDFLOW_KERNELS" in out.stderr


_FORK = """
import os, numpy as np, shardflow, shardflow.nn.functional as F
x = shardflow.tensor(np.random.default_rng(0).standard_normal((300, 40)).astype(np.float32))
parent = F.softmax(x, dim=-1).numpy()  # the parallel kernel has run: OpenMP threads exist
pid = os.fork()
if pid == 0:
    child = F.softmax(x, dim=-1).numpy()  # serial build in the child
    os._exit(0 if np.allclose(child, parent, rtol=1e-6, atol=1e-8) else 3)
print(os.waitpid(pid, 0)[1])
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_runs_kernels_serially_instead_of_aborting():
    # two kernel threads: the parallel build (one thread would build it serial already)
    env = dict(os.environ, SHARDFLOW_KERNELS="numba", SHARDFLOW_KERNEL_THREADS="2")
    out = subprocess.run([sys.executable, "-c", _FORK], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "0", (out.stdout, out.stderr)


def _dropout_run(monkeypatch, mode, x0, inplace=False, generator=None):
    monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
    shardflow.manual_seed(11)
    x = shardflow.tensor(x0, requires_grad=True)
    h = x * 1.0  # a non-leaf, so that inplace=True is allowed
    y = shardflow.dropout(h, 0.3, training=True, inplace=inplace, generator=generator)
    op = type(y.grad_fn).__name__
    g = np.random.default_rng(2).standard_normal(y.shape).astype(x0.dtype)
    y.backward(shardflow.tensor(g))
    return y.detach().numpy(), x.grad.numpy(), op


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("inplace", [False, True])
def test_dropout_kernel_is_bit_identical_to_numpy_path(monkeypatch, dtype, inplace):
    """Same seed -> the same uniform draws, mask, output and gradient (over several blocks)."""
    x0 = np.random.default_rng(0).standard_normal((ROWS, 300)).astype(dtype)
    y_k, g_k, op_k = _dropout_run(monkeypatch, "numba", x0, inplace)
    y_n, g_n, op_n = _dropout_run(monkeypatch, "numpy", x0, inplace)
    assert op_k == "FusedDropout" and op_n != "FusedDropout"
    np.testing.assert_array_equal(y_k, y_n)
    np.testing.assert_array_equal(g_k, g_n)
    kept = y_k != 0
    # p = 0.3 dropped: within 5 standard errors, sqrt(p (1 - p) / n) = 0.0012 for 155100 draws
    assert abs(kept.mean() - 0.7) <= 5 * np.sqrt(0.3 * 0.7 / kept.size), kept.mean()
    np.testing.assert_allclose(y_k[kept], x0[kept] / np.asarray(0.7, dtype), rtol=1e-6)
    np.testing.assert_array_equal(g_k != 0, kept)  # backward reuses the forward's mask


def test_dropout_kernel_follows_an_explicit_generator(monkeypatch):
    x0 = np.ones((64, 64), np.float32)
    a = _dropout_run(monkeypatch, "numba", x0, generator=shardflow.Generator().manual_seed(5))
    b = _dropout_run(monkeypatch, "numpy", x0, generator=shardflow.Generator().manual_seed(5))
    c = _dropout_run(monkeypatch, "numba", x0, generator=shardflow.Generator().manual_seed(6))
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])


# ---------------------------------------------------------------- conv2d and max_pool2d (CNN)
def _pool_input(shape, dtype):
    """Small integers (many ties inside a window), some NaN and -inf."""
    x = np.random.default_rng(7).integers(-2, 3, shape).astype(dtype)
    x.flat[::7] = np.nan
    x.flat[3::11] = -np.inf
    x.flat[5::13] = np.inf
    return x


def _pool_run(monkeypatch, mode, x0, **kw):
    monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
    x = shardflow.tensor(x0, requires_grad=True)
    out = F.max_pool2d(x, 2, **kw)
    y, idx = out if kw.get("return_indices") else (out, None)
    fused = getattr(y.grad_fn, "fused", None)
    g = np.random.default_rng(3).standard_normal(y.shape).astype(x0.dtype)
    y.backward(shardflow.tensor(g))
    return y.detach().numpy(), None if idx is None else idx.numpy(), x.grad.numpy(), fused


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 5, 8, 6), (2, 3, 7, 5), (4, 6, 9)])  # even, odd, unbatched
def test_max_pool2d_kernel_is_bit_identical_to_numpy_path(monkeypatch, shape, dtype):
    """Ties (first maximum in row-major order), NaN (propagates into the value, does not move
    the position) and +-inf, uncovered last rows/columns (odd sizes): the same values, indices
    and gradients bit for bit."""
    x0 = _pool_input(shape, dtype)
    for kw in ({}, {"return_indices": True}, {"stride": 2, "ceil_mode": True}):
        got = _pool_run(monkeypatch, "numba", x0, **kw)
        want = _pool_run(monkeypatch, "numpy", x0, **kw)
        # ceil_mode on odd sizes makes partial windows: those stay on the NumPy path
        partial = kw.get("ceil_mode") and any(s % 2 for s in shape[-2:])
        assert got[3] is (not partial) and want[3] is False
        for a, b in zip(got[:3], want[:3], strict=True):
            assert (a is None) == (b is None)  # indices: both or neither
            if a is not None:
                np.testing.assert_array_equal(a, b)


def test_max_pool2d_kernel_ties_match_torch(monkeypatch):
    """PyTorch routes the gradient to the first maximum of a window in row-major order."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numba")
    x0 = np.random.default_rng(9).integers(0, 2, (2, 3, 6, 8)).astype(np.float32)  # mostly ties
    x = shardflow.tensor(x0, requires_grad=True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    assert y.grad_fn.fused is True
    g = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
    y.backward(shardflow.tensor(g))
    xt = torch.tensor(x0, requires_grad=True)
    yt, it = torch.nn.functional.max_pool2d(xt, 2, return_indices=True)
    yt.backward(torch.tensor(g))
    np.testing.assert_array_equal(y.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(idx.numpy(), it.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())


CONV_CASES = {  # name -> (input shape, weight shape, conv2d keywords)
    "pad1": ((5, 3, 9, 7), (6, 3, 3, 3), dict(padding=1)),
    "groups_dilation": ((3, 4, 8, 9), (6, 2, 3, 2), dict(padding=(2, 1), dilation=(2, 1), groups=2)),
    "same_even_kernel": ((3, 2, 6, 5), (4, 2, 4, 2), dict(padding="same", dilation=(1, 2))),
    "stride2": ((2, 3, 9, 8), (4, 3, 3, 3), dict(padding=1, stride=2)),
    "unbatched": ((5, 6, 7), (4, 5, 3, 3), dict(padding=1)),
}


def _conv_run(monkeypatch, mode, x0, w0, b0, kw):
    monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
    x, w, b = (shardflow.tensor(a, requires_grad=True) for a in (x0, w0, b0))
    y = F.conv2d(x, w, b, **kw)
    fused = y.grad_fn.fused
    g = np.random.default_rng(2).standard_normal(y.shape).astype(x0.dtype)
    y.backward(shardflow.tensor(g))
    return [y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()], fused, g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv2d_kernels_are_bit_identical_to_numpy_path(monkeypatch, name, dtype):
    """The transpose + bias, wide-gradient and col2im kernels do the NumPy path's arithmetic
    in its order: output, input and weight gradients bit for bit. The bias gradient is summed
    in float64 in the kernel (NumPy: pairwise in the dtype), so it agrees to rounding."""
    xs, ws, kw = CONV_CASES[name]
    r = np.random.default_rng(0)
    x0, w0, b0 = (r.standard_normal(s).astype(dtype) for s in (xs, ws, ws[:1]))
    got, fused_k, g = _conv_run(monkeypatch, "numba", x0, w0, b0, kw)
    want, fused_n, _ = _conv_run(monkeypatch, "numpy", x0, w0, b0, kw)
    assert fused_k is True and fused_n is False
    assert got[1].flags.c_contiguous or got[1].ndim == 3
    for a, b in zip(got[:3], want[:3]):
        np.testing.assert_array_equal(a, b)
    g64 = g.astype(np.float64).reshape((-1,) + g.shape[-3:])  # unbatched: one sample
    exact, scale = g64.sum(axis=(0, 2, 3)), np.abs(g64).sum(axis=(0, 2, 3))
    eps = 1e-6 if dtype == "float32" else 1e-14
    for gb in (got[3], want[3]):
        assert got[3].dtype == want[3].dtype == np.dtype(dtype)
        assert np.all(np.abs(gb - exact) <= eps * scale)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sdpa_row_blocks_kernel_matches_numpy_path(monkeypatch, dtype):
    """GPT's layout with head size 64: the blocked path's GEMMs run on 32-row / 32-key blocks
    (ops/attention.py) and the kernels mask per row; the NumPy path computes whole score
    matrices. Both must agree, forward and backward."""
    x0 = np.random.default_rng(0).standard_normal((2, 128, 384)).astype(dtype)
    y_k, g_k, _, fused_k = _run(monkeypatch, "numba", _sdpa_qkv, x0)
    y_n, g_n, _, fused_n = _run(monkeypatch, "numpy", _sdpa_qkv, x0)
    assert fused_k is True and fused_n is False
    np.testing.assert_allclose(y_k, y_n, **TOL[dtype])
    np.testing.assert_allclose(g_k, g_n, **TOL[dtype])


@pytest.mark.parametrize("mode", ["numba", "numpy"])
def test_sdpa_strided_heads_gradients_keep_the_input_layout(monkeypatch, mode):
    """Heads split from a (B, T, 3C) projection are read in place (no copies) and their
    gradients are stored (B, T, H, hs) so the split's backward reshapes without a copy; the
    output is laid out as torch's CPU flash kernel lays it out (the query's (B, T, H, hs)
    order, so ``y.transpose(1, 2)`` is contiguous); values agree with PyTorch."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
    x0 = np.random.default_rng(1).standard_normal((2, 40, 48)).astype(np.float32)
    g0 = np.random.default_rng(2).standard_normal((2, 2, 40, 8)).astype(np.float32)

    def heads(x):
        return [t.reshape(2, 40, 2, 8).transpose(1, 2) for t in x.split(16, dim=2)]

    x = shardflow.tensor(x0, requires_grad=True)
    qkv = heads(x)
    for t in qkv:
        t.retain_grad()
    y = F.scaled_dot_product_attention(*qkv, is_causal=True)
    y.backward(shardflow.tensor(g0))
    xt = torch.tensor(x0, requires_grad=True)
    yt = torch.nn.functional.scaled_dot_product_attention(*heads(xt), is_causal=True)
    yt.backward(torch.tensor(g0))
    assert y.stride() == yt.stride() and y.transpose(1, 2).is_contiguous()
    for t in qkv:
        assert t.grad.array.transpose(0, 2, 1, 3).flags.c_contiguous  # stored (B, T, H, hs)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["numba", "numpy"])
def test_conv2d_and_max_pool2d_empty_batch(monkeypatch, mode):
    """A batch of 0 samples: the one-GEMM lowering's reshapes and the kernels' wrappers take
    it (empty output, zero weight and bias gradients), as PyTorch does."""
    monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
    x = shardflow.tensor(np.zeros((0, 3, 8, 8), np.float32), requires_grad=True)
    w = shardflow.tensor(np.ones((4, 3, 3, 3), np.float32), requires_grad=True)
    b = shardflow.tensor(np.ones(4, np.float32), requires_grad=True)
    y = F.max_pool2d(F.conv2d(x, w, b, padding=1), 2)
    assert tuple(y.shape) == (0, 4, 4, 4)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 8, 8)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 3, 3, 3), np.float32))
    np.testing.assert_array_equal(b.grad.numpy(), np.zeros(4, np.float32))


def test_conv_transpose2d_empty_batch():
    """conv_transpose's one-GEMM layout takes a batch of 0 samples, as PyTorch does."""
    x = shardflow.tensor(np.zeros((0, 4, 3, 3), np.float32), requires_grad=True)
    w = shardflow.tensor(np.ones((4, 2, 3, 3), np.float32), requires_grad=True)
    y = F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1, groups=2)
    assert tuple(y.shape) == (0, 4, 6, 6)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 4, 3, 3)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 2, 3, 3), np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_backward_kernel_matches_numpy_path_and_torch_on_nonfinite(monkeypatch, dtype):
    """ReLU backward: the one-pass kernel and the NumPy path give the same bits, and an inf or
    NaN upstream gradient at an inactive unit gives 0 as PyTorch's threshold_backward."""
    import torch

    from shardflow.ops.elementwise import Relu

    rng = np.random.default_rng(3)
    y = np.maximum(rng.standard_normal((1031, 7)), 0).astype(dtype)
    y[::5, 0] = 0.0  # exact zeros: relu'(0) = 0
    y[::7, 4] = np.nan  # a NaN unit passes its gradient (torch: y <= 0 gives 0, NaN does not)
    g = rng.standard_normal(y.shape).astype(dtype)
    g[::3, 1], g[1::3, 2], g[2::4, 3] = np.nan, np.inf, -np.inf
    out = {}
    for mode in ("numba", "numpy"):
        monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
        fn = Relu()
        fn.y = y
        out[mode] = fn.backward(g)
        assert fn.fused == (mode == "numba")
    np.testing.assert_array_equal(out["numba"], out["numpy"])
    x = torch.tensor(y, requires_grad=True)
    torch.relu(x).backward(torch.tensor(g))
    np.testing.assert_array_equal(out["numba"], x.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_of_large_negative_inputs_is_zero_as_torch(monkeypatch, dtype):
    """The float32 erf reached 1 + 5e-8 at its clamp, so 1 + erf(x) was -5e-8 for large
    negative x: gelu(-1e6) was +0.02 and gelu(-inf) +inf (torch: -0 and NaN)."""
    import torch

    x = np.array([-np.inf, -1e30, -1e6, -50.0, -10.0, -3.0, 0.5], dtype)
    want = torch.nn.functional.gelu(torch.tensor(x)).numpy()
    for mode in ("numba", "numpy"):
        monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
        got = F.gelu(shardflow.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, **TOL[np.dtype(dtype).name], equal_nan=True, err_msg=mode)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "cross_entropy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_softmax_kernels_keep_nan_as_torch(monkeypatch, op, dtype):
    """A row of -inf only, or holding a NaN or +inf, is NaN in torch (forward and gradient);
    the kernels' subnormal flush (``v >= tiny``) used to turn those NaNs into 0: a silent wrong
    result the NumPy path did not give."""
    import torch

    x = np.array([[-np.inf, -np.inf, -np.inf], [1, np.nan, 2], [1, np.inf, 2], [1, 2, 3]], dtype)
    w = np.arange(3, dtype=dtype)
    target = np.array([0, 1, 2, 0])

    def run(lib, x0):
        t = lib.tensor(x0, requires_grad=True)
        if op == "cross_entropy":
            y = lib.nn.functional.cross_entropy(t, lib.tensor(target), reduction="none")
            y.sum().backward()
        else:
            y = getattr(lib, op)(t, -1)
            (y * lib.tensor(w)).sum().backward()
        return y.detach().numpy(), t.grad.numpy()

    want = run(torch, x)
    for mode in ("numba", "numpy"):
        monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
        for got, ref in zip(run(shardflow, x), want):
            np.testing.assert_allclose(got, ref, **TOL[np.dtype(dtype).name], err_msg=mode)


@pytest.mark.parametrize("config", [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
], ids=["sgd", "sgd_nesterov", "adam", "adam_amsgrad", "adamw"])
def test_optimizer_kernels_treat_nonfinite_values_as_torch(monkeypatch, config):
    """An inf parameter with no weight decay stays inf and a NaN gradient's square wins
    AMSGrad's max, as in torch: the kernels computed ``0 * x`` (NaN for an inf x) for the
    absent weight-decay term and kept the old maximum over a NaN."""
    import torch

    name, kw = config
    p0 = np.array([np.inf, -np.inf, 1.0, 2.0, -1.0, 0.5], np.float32)
    grads = [np.array([0.5, 0.5, np.nan, 1.0, np.inf, 0.1], np.float32),
             np.array([0.5, -0.5, 0.5, 0.5, 0.5, 0.5], np.float32)]

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(p0.copy()))
        opt = getattr(lib.optim, name)([p], **kw)
        for g in grads:
            p.grad = lib.tensor(g.copy())
            opt.step()
        return p.detach().numpy()

    want = run(torch)
    for mode in ("numba", "numpy"):
        monkeypatch.setenv("SHARDFLOW_KERNELS", mode)
        np.testing.assert_allclose(run(shardflow), want, rtol=1e-5, equal_nan=True, err_msg=mode)
