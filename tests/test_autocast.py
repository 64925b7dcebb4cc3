"""Autocast: per-op dtype and values against ``torch.autocast('cpu')``, gradients in float32,
nesting, ``enabled=False``, the cast cache, and a short bfloat16 training run that can fail.

Each case runs the same call on shardflow and on torch (``lib`` is ``shardflow`` or
``torch``), inside both libraries' CPU autocast, with float32 inputs and with bfloat16
inputs; the result's dtype must be torch's and its values torch's within bfloat16 rounding.
The expected dtypes are not written here: torch decides them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import shardflow as sf
import shardflow.nn as snn
import shardflow.nn.functional as SF
from shardflow.amp import cast_hook, policy
from shardflow.autograd import dispatch

RNG = np.random.default_rng(0)


def _f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _pos(*shape):
    return (RNG.random(shape).astype(np.float32) * 0.8 + 0.1)


def _fn(lib):
    return SF if lib is sf else TF


def _pool3d(name):
    def call(lib, x):
        f = dispatch.OPS[name] if lib is sf else getattr(TF, name)
        return f(x, 2)
    return call


def _spd(n):
    """A well-conditioned symmetric positive definite matrix (exact in bfloat16, so that both
    libraries factor the same float32 matrix)."""
    a = _f(n, n)
    m = a @ a.T + n * np.eye(n, dtype=np.float32)
    return m.astype(np.float32).round(1)


def _chol(n):
    return np.linalg.cholesky(_spd(n).astype(np.float64)).astype(np.float32).round(2)


def _lu_inputs(n):
    lu, piv = torch.linalg.lu_factor(torch.tensor(_spd(n)).to(torch.bfloat16).float())
    return [_f(n, 2), lu.to(torch.bfloat16).float().numpy(), piv.numpy().astype(np.float32)]


def _log_probs(*shape):
    x = _f(*shape)
    return (x - np.log(np.exp(x).sum(-1, keepdims=True))).astype(np.float32)


LABELS = np.array([0, 2, 1, 3])
# name -> (call(lib, *tensors), input arrays)
CASES = {
    # LOWER on CPU
    "conv1d": (lambda lib, x, w: _fn(lib).conv1d(x, w), [_f(2, 3, 8), _f(4, 3, 3)]),
    "conv2d": (lambda lib, x, w, b: _fn(lib).conv2d(x, w, b, padding=1), [_f(2, 3, 6, 6), _f(4, 3, 3, 3), _f(4)]),
    "conv3d": (lambda lib, x, w: _fn(lib).conv3d(x, w), [_f(1, 2, 4, 4, 4), _f(3, 2, 2, 2, 2)]),
    "conv_transpose1d": (lambda lib, x, w: _fn(lib).conv_transpose1d(x, w), [_f(2, 3, 5), _f(3, 2, 3)]),
    "conv_transpose2d": (lambda lib, x, w: _fn(lib).conv_transpose2d(x, w, stride=2), [_f(1, 3, 4, 4), _f(3, 2, 3, 3)]),
    "conv_transpose3d": (lambda lib, x, w: _fn(lib).conv_transpose3d(x, w), [_f(1, 2, 3, 3, 3), _f(2, 2, 2, 2, 2)]),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), [_f(2, 3, 4), _f(2, 4, 5)]),
    "mm": (lambda lib, a, b: lib.mm(a, b), [_f(3, 4), _f(4, 5)]),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), [_f(2, 3, 5), _f(2, 3, 4), _f(2, 4, 5)]),
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b), [_f(3, 5), _f(3, 4), _f(4, 5)]),
    "linear": (lambda lib, x, w, b: _fn(lib).linear(x, w, b), [_f(3, 4), _f(5, 4), _f(5)]),
    "matmul": (lambda lib, a, b: lib.matmul(a, b), [_f(2, 3, 4), _f(4, 5)]),
    "sdpa": (lambda lib, q, k, v: _fn(lib).scaled_dot_product_attention(q, k, v, is_causal=True),
             [_f(1, 2, 4, 8), _f(1, 2, 4, 8), _f(1, 2, 4, 8)]),
    "einsum": (lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b), [_f(2, 3, 4), _f(2, 4, 5)]),
    "inner": (lambda lib, a, b: lib.inner(a, b), [_f(3, 4), _f(5, 4)]),
    "addbmm": (lambda lib, c, a, b: lib.addbmm(c, a, b), [_f(3, 5), _f(2, 3, 4), _f(2, 4, 5)]),
    "prelu": (lambda lib, x, w: _fn(lib).prelu(x, w), [_f(2, 3, 4), _pos(3)]),
    "linalg_vecdot": (lambda lib, a, b: lib.linalg.vecdot(a, b), [_f(3, 4), _f(3, 4)]),
    # FP32 on CPU
    "avg_pool3d": (_pool3d("avg_pool3d"), [_f(1, 2, 4, 4, 4)]),
    "max_pool3d": (_pool3d("max_pool3d"), [_f(1, 2, 4, 4, 4)]),
    "adaptive_avg_pool3d": (_pool3d("adaptive_avg_pool3d"), [_f(1, 2, 4, 4, 4)]),
    "binary_cross_entropy": (lambda lib, p, t: _fn(lib).binary_cross_entropy(p, t), [_pos(4, 3), _pos(4, 3)]),
    "bce_with_logits": (lambda lib, x, t: _fn(lib).binary_cross_entropy_with_logits(x, t), [_f(4, 3), _pos(4, 3)]),
    "prod": (lambda lib, x: lib.prod(x, 1), [_pos(3, 4) + 0.5]),
    "mse_loss": (lambda lib, a, b: _fn(lib).mse_loss(a, b), [_f(4, 3), _f(4, 3)]),
    "l1_loss": (lambda lib, a, b: _fn(lib).l1_loss(a, b), [_f(4, 3), _f(4, 3)]),
    "smooth_l1_loss": (lambda lib, a, b: _fn(lib).smooth_l1_loss(a, b), [_f(4, 3), _f(4, 3)]),
    "huber_loss": (lambda lib, a, b: _fn(lib).huber_loss(a, b, delta=0.5), [_f(4, 3), _f(4, 3)]),
    "kl_div": (lambda lib, a, b: _fn(lib).kl_div(a, b, reduction="batchmean"), [_f(4, 3), _pos(4, 3)]),
    "cross_entropy": (lambda lib, x: _fn(lib).cross_entropy(x, lib.tensor(LABELS)), [_f(4, 5)]),
    "nll_loss": (lambda lib, x: _fn(lib).nll_loss(x, lib.tensor(LABELS)), [_f(4, 5)]),
    # FP32 on CPU: linear algebra, FFTs, quantiles and a few more (torch's fp32 list)
    "cdist": (lambda lib, a, b: lib.cdist(a, b), [_f(3, 4), _f(5, 4)]),
    "trace": (lambda lib, a: lib.trace(a), [_spd(3)]),
    "cholesky": (lambda lib, a: lib.cholesky(a), [_spd(3)]),
    "cholesky_inverse": (lambda lib, l: lib.cholesky_inverse(l), [_chol(3)]),
    "cholesky_solve": (lambda lib, b, l: lib.cholesky_solve(b, l), [_f(3, 2), _chol(3)]),
    "inverse": (lambda lib, a: lib.inverse(a), [_spd(3)]),
    "pinverse": (lambda lib, a: lib.pinverse(a), [_spd(3)]),
    "geqrf": (lambda lib, a: lib.geqrf(a)[0].abs(), [_spd(3)]),
    "orgqr": (lambda lib, a, tau: lib.orgqr(a, tau).abs(), [_f(4, 3), _f(3) * 0.5]),
    "ormqr": (lambda lib, a, tau, c: lib.ormqr(a, tau, c), [_f(4, 3), _f(3) * 0.5, _f(4, 2)]),
    "lu_solve": (lambda lib, b, lu, piv: lib.lu_solve(b, lu, piv.to(lib.int32)), _lu_inputs(3)),
    "qr": (lambda lib, a: lib.qr(a)[1].abs(), [_spd(3)]),
    "svd": (lambda lib, a: lib.svd(a)[1], [_spd(3)]),
    "triangular_solve": (lambda lib, b, a: lib.triangular_solve(b, a, upper=False)[0], [_f(3, 2), _chol(3)]),
    "linalg_inv": (lambda lib, a: lib.linalg.inv(a), [_spd(3)]),
    "linalg_cholesky": (lambda lib, a: lib.linalg.cholesky(a), [_spd(3)]),
    "linalg_cholesky_ex": (lambda lib, a: lib.linalg.cholesky_ex(a)[0], [_spd(3)]),
    "linalg_eigh": (lambda lib, a: lib.linalg.eigh(a)[0], [_spd(3)]),
    "linalg_eigvalsh": (lambda lib, a: lib.linalg.eigvalsh(a), [_spd(3)]),
    "linalg_eig": (lambda lib, a: lib.linalg.eig(a)[0].abs(), [_spd(3)]),
    "linalg_eigvals": (lambda lib, a: lib.linalg.eigvals(a).abs(), [_spd(3)]),
    "linalg_svd": (lambda lib, a: lib.linalg.svd(a)[1], [_spd(3)]),
    "linalg_svdvals": (lambda lib, a: lib.linalg.svdvals(a), [_spd(3)]),
    "linalg_qr": (lambda lib, a: lib.linalg.qr(a)[1].abs(), [_spd(3)]),
    "linalg_lstsq": (lambda lib, a, b: lib.linalg.lstsq(a, b)[0], [_spd(3), _f(3, 2)]),
    "linalg_cond": (lambda lib, a: lib.linalg.cond(a), [_spd(3)]),
    "linalg_householder_product": (lambda lib, a, tau: lib.linalg.householder_product(a, tau).abs(),
                                   [_f(4, 3), _f(3) * 0.5]),
    "linalg_matrix_rank": (lambda lib, a: lib.linalg.matrix_rank(a), [_spd(3)]),
    "fft_fft": (lambda lib, x: lib.fft.fft(x).abs(), [_f(8)]),
    "fft_ifft": (lambda lib, x: lib.fft.ifft(x).abs(), [_f(8)]),
    "fft_rfft": (lambda lib, x: lib.fft.rfft(x).abs(), [_f(8)]),
    "fft_irfft": (lambda lib, x: lib.fft.irfft(x), [_f(8)]),
    "fft_hfft": (lambda lib, x: lib.fft.hfft(x), [_f(8)]),
    "fft_ihfft": (lambda lib, x: lib.fft.ihfft(x).abs(), [_f(8)]),
    "fft_fft2": (lambda lib, x: lib.fft.fft2(x).abs(), [_f(4, 4)]),
    "fft_ifft2": (lambda lib, x: lib.fft.ifft2(x).abs(), [_f(4, 4)]),
    "fft_rfft2": (lambda lib, x: lib.fft.rfft2(x).abs(), [_f(4, 4)]),
    "fft_irfft2": (lambda lib, x: lib.fft.irfft2(x), [_f(4, 4)]),
    "fft_fftn": (lambda lib, x: lib.fft.fftn(x).abs(), [_f(2, 4, 4)]),
    "fft_ifftn": (lambda lib, x: lib.fft.ifftn(x).abs(), [_f(2, 4, 4)]),
    "fft_rfftn": (lambda lib, x: lib.fft.rfftn(x).abs(), [_f(2, 4, 4)]),
    "fft_irfftn": (lambda lib, x: lib.fft.irfftn(x), [_f(2, 4, 4)]),
    "quantile": (lambda lib, x: lib.quantile(x, 0.3, dim=1), [_f(3, 8)]),
    "nanquantile": (lambda lib, x: lib.nanquantile(x, 0.3, dim=1), [_f(3, 8)]),
    "polar": (lambda lib, r, t: lib.polar(r, t).abs(), [_pos(5), _f(5)]),
    "grid_sample": (lambda lib, x, g: _fn(lib).grid_sample(x, g, align_corners=False),
                    [_f(1, 2, 4, 4), _f(1, 3, 3, 2) * 0.9]),
    "adaptive_max_pool3d": (lambda lib, x: _fn(lib).adaptive_max_pool3d(x, 2), [_f(1, 2, 4, 4, 4)]),
    "ctc_loss": (lambda lib, lp: _fn(lib).ctc_loss(lp, lib.tensor([[1, 2], [1, 1]]), lib.tensor([6, 6]),
                                                   lib.tensor([2, 2])), [_log_probs(6, 2, 4)]),
    "stft": (lambda lib, x, w: lib.stft(x, 16, window=w, return_complex=True).abs(),
             [_f(64), np.hanning(16).astype(np.float32)]),
    # not in the CPU policy: the op's own dtype rules (PyTorch keeps bfloat16 as bfloat16)
    "softmax": (lambda lib, x: _fn(lib).softmax(x, -1), [_f(3, 5)]),
    "log_softmax": (lambda lib, x: _fn(lib).log_softmax(x, -1), [_f(3, 5)]),
    "layer_norm": (lambda lib, x: _fn(lib).layer_norm(x, (5,)), [_f(3, 5)]),
    "sum": (lambda lib, x: x.sum(), [_f(3, 5)]),
    "exp": (lambda lib, x: x.exp(), [_f(3, 5)]),
    "gelu": (lambda lib, x: _fn(lib).gelu(x), [_f(3, 5)]),
    "mv": (lambda lib, a, v: lib.mv(a, v), [_f(3, 4), _f(4)]),
    "dot": (lambda lib, a, b: lib.dot(a, b), [_f(4), _f(4)]),
}
# PROMOTE: mixed bfloat16 / float32 inputs go to the widest
PROMOTE_CASES = {
    "cat": lambda lib, a, b: lib.cat([a, b]),
    "stack": lambda lib, a, b: lib.stack([a, b]),
}


# Ops outside the policy whose bfloat16 result is float32 because of the op itself (NumPy
# computes bfloat16 products in float32): tests/ops/dtype_gaps.py's _MATMUL entry, fixed in
# ops/matmul.py. Strict: once fixed, these start passing and must be removed here.
OP_GAPS: set = set()  # (op, low-precision inputs) pairs known to differ from torch


def _inputs(lib, arrays, low: bool):
    out = []
    for a in arrays:
        t = lib.tensor(a)
        out.append(t.to(lib.bfloat16) if low else t)
    return out


def _as_np(t):
    return t.detach().float().numpy()


def _dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


def _close(got, ref, what, computed_in="bfloat16"):
    """Equal within the rounding of the precision the values were computed in. bfloat16
    (8 significant bits, unit roundoff 2^-8 = 3.9e-3): 2e-2, about five roundings, relative
    and of the tensor's largest value (sums like baddbmm's ``c + a @ b`` round twice, and
    cancel). float32 (unit roundoff 6e-8): 1e-5 / 1e-6 of the largest value, a few hundred
    roundings; the float32 results here agree with torch's to 2e-7."""
    scale = max(1.0, float(np.abs(ref).max()))
    rtol, atol = (2e-2, 2e-2) if computed_in == "bfloat16" else (1e-5, 1e-6)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * scale,
                               err_msg=f"{what} (computed in {computed_in})")


@pytest.mark.parametrize("low", [False, True], ids=["float32_inputs", "bfloat16_inputs"])
@pytest.mark.parametrize("name", list(CASES))
def test_op_dtype_and_values_match_torch_cpu_autocast(name, low, request):
    if (name, low) in OP_GAPS:
        request.applymarker(pytest.mark.xfail(strict=True, reason="bfloat16 matmul gap in ops/matmul.py"))
    call, arrays = CASES[name]
    with torch.autocast("cpu"):
        ref = call(torch, *_inputs(torch, arrays, low))
    with sf.autocast("cpu"):
        got = call(sf, *_inputs(sf, arrays, low))
    assert _dtype_name(got.dtype) == _dtype_name(ref.dtype), (
        f"{name}: autocast gave {got.dtype}, torch.autocast('cpu') gives {ref.dtype}")
    # a float32 result was computed in float32 (from bfloat16 inputs cast exactly)
    _close(_as_np(got), _as_np(ref), name, computed_in=_dtype_name(ref.dtype))


@pytest.mark.parametrize("name", list(PROMOTE_CASES))
def test_promote_ops_go_to_the_widest_input_dtype(name):
    a, b = _f(2, 3), _f(2, 3)
    outs = {}
    for lib, ac in ((torch, torch.autocast), (sf, sf.autocast)):
        with ac("cpu"):
            outs[lib] = PROMOTE_CASES[name](lib, lib.tensor(a).to(lib.bfloat16), lib.tensor(b))
    assert _dtype_name(outs[sf].dtype) == _dtype_name(outs[torch].dtype) == "float32"
    _close(_as_np(outs[sf]), _as_np(outs[torch]), name, computed_in="float32")


def test_every_cpu_policy_op_has_a_case():
    covered = set(CASES) | set(PROMOTE_CASES) | {"concat", "concatenate"}
    renamed = {"scaled_dot_product_attention": "sdpa",
               "binary_cross_entropy_with_logits": "bce_with_logits"}
    missing = [n for n in policy.POLICY["cpu"] if renamed.get(n, n) not in covered]
    assert not missing, f"CPU policy ops without a parity case: {missing}"


def test_float64_inputs_are_not_cast():
    a = sf.randn(3, 4, dtype=sf.float64)
    with sf.autocast("cpu"):
        assert (a @ a.t()).dtype == sf.float64


# ------------------------------------------------------------------ gradients
def _grad_case(lib, x, w1, b1, k):
    F = _fn(lib)
    h = F.gelu(F.linear(x, w1, b1))                          # (B, H) low precision
    att = F.scaled_dot_product_attention(h[None, None], h[None, None], h[None, None])[0, 0]
    y = F.conv1d(att[None], k, padding=1)[0]                  # (C, H)
    return F.cross_entropy(y.t(), lib.tensor(np.arange(y.shape[1]) % y.shape[0]))


def test_gradients_are_float32_and_match_torch():
    # its own generator: the module's RNG is at another state after each case added above
    # (or each test run before this one in the worker), and bfloat16 gradients summed from
    # SDPA's three inputs (q = k = v here) differ from torch's by an ulp per term, which
    # cancellation can make large for some draws
    gen = np.random.default_rng(20)
    arrays = [gen.standard_normal(s).astype(np.float32) for s in ((4, 6), (8, 6), (8,), (3, 4, 3))]
    grads = {}
    for lib, ac in ((torch, torch.autocast), (sf, sf.autocast)):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        with ac("cpu"):
            loss = _grad_case(lib, *leaves)
        assert _dtype_name(loss.dtype) == "float32"
        loss.backward()
        grads[lib] = [p.grad for p in leaves]
    for i, (g, r) in enumerate(zip(grads[sf], grads[torch], strict=True)):
        assert g.dtype == sf.float32, f"leaf {i}: gradient {g.dtype}, the leaf is float32"
        _close(_as_np(g), _as_np(r), f"grad of leaf {i}")


def test_module_parameters_stay_float32_with_float32_grads():
    m = snn.Sequential(snn.Linear(4, 8), snn.ReLU(), snn.Linear(8, 2))
    with sf.autocast("cpu"):
        out = m(sf.randn(3, 4))
        loss = SF.mse_loss(out, sf.zeros(3, 2))
    assert out.dtype == sf.bfloat16 and loss.dtype == sf.float32
    loss.backward()
    for n, p in m.named_parameters():
        assert p.dtype == sf.float32 and p.grad.dtype == sf.float32, n


# ------------------------------------------------------------------ region semantics
def test_nesting_disabling_and_restoring():
    a = sf.randn(2, 3)
    with sf.autocast("cpu"):
        assert (a @ a.t()).dtype == sf.bfloat16
        with sf.autocast("cpu", enabled=False):
            assert (a @ a.t()).dtype == sf.float32
            assert not sf.is_autocast_enabled("cpu")
        with sf.autocast("cpu", dtype=sf.float16):
            assert (a @ a.t()).dtype == sf.float16
        assert (a @ a.t()).dtype == sf.bfloat16 and sf.get_autocast_dtype("cpu") == sf.bfloat16
    assert (a @ a.t()).dtype == sf.float32
    assert dispatch._hooks[2] is None, "the cast hook must be removed after the last region"


def test_enabled_false_installs_nothing_and_casts_nothing():
    a = sf.randn(2, 3)
    with sf.autocast("cpu", enabled=False):
        assert dispatch._hooks[2] is None
        assert (a @ a.t()).dtype == sf.float32


def test_region_state_is_restored_after_an_exception():
    with pytest.raises(ValueError), sf.autocast("cpu"):
        raise ValueError("boom")
    assert not sf.is_autocast_enabled("cpu") and dispatch._hooks[2] is None


def test_cache_casts_a_weight_once_and_recasts_after_an_inplace_update():
    w = sf.randn(4, 4, requires_grad=True)
    x = sf.randn(2, 4)
    with sf.autocast("cpu"):
        y1 = x @ w
        cast_w = cast_hook._cache[id(w)][4]
        x @ w
        assert cast_hook._cache[id(w)][4] is cast_w and len(cast_hook._cache) == 1, "w is cast once"
        with sf.no_grad():
            w.mul_(2.0)
        y3 = x @ w
    # doubling is exact in bfloat16: the recast 2w gives exactly twice the old product (the
    # stale cached cast would give y1 itself)
    np.testing.assert_array_equal(_as_np(y3), 2 * _as_np(y1))
    assert not cast_hook._cache, "the cache is cleared when the outermost region exits"
    with sf.autocast("cpu", cache_enabled=False):
        x @ w
        assert not cast_hook._cache


def test_training_loop_inside_one_region_sees_updated_weights():
    """The cached cast must not outlive a backward or an optimizer step."""
    m = snn.Linear(3, 1)
    opt = sf.optim.SGD(m.parameters(), lr=0.1)
    x, y = sf.randn(8, 3), sf.randn(8, 1)
    losses = []
    with sf.autocast("cpu"):
        for _ in range(3):
            loss = SF.mse_loss(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert losses[2] < losses[1] < losses[0]


# ------------------------------------------------------------------ short convergence check
def _train(use_autocast: bool, steps: int = 40) -> list[float]:
    sf.manual_seed(0)
    model = snn.Sequential(snn.Linear(8, 32), snn.GELU(), snn.Linear(32, 4))
    opt = sf.optim.Adam(model.parameters(), lr=1e-2)
    gen = np.random.default_rng(1)
    X = gen.standard_normal((64, 8)).astype(np.float32)
    Y = (X[:, :4] * 2 - X[:, 4:]).argmax(1)
    xb, yb = sf.tensor(X), sf.tensor(Y)
    losses = []
    for _ in range(steps):
        with sf.autocast("cpu", enabled=use_autocast):
            loss = SF.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_bfloat16_training_tracks_float32():
    fp32, bf16 = _train(False), _train(True)
    assert fp32[-1] < 0.5 * fp32[0]
    assert bf16[-1] < 0.5 * bf16[0], f"bfloat16 run did not learn: {bf16[0]:.3f} -> {bf16[-1]:.3f}"
    assert abs(bf16[-1] - fp32[-1]) <= 0.1 * fp32[0], (fp32[-1], bf16[-1])


def test_cpu_amp_spellings_warn_like_torch_and_cast():
    a = sf.randn(2, 3)
    for lib in (sf, torch):
        with pytest.warns(FutureWarning, match="cpu.amp.autocast"), lib.cpu.amp.autocast():
            assert lib.get_autocast_dtype("cpu") == lib.bfloat16 and lib.is_autocast_enabled("cpu")
        with pytest.warns(FutureWarning, match="cpu.amp.GradScaler"):
            assert lib.cpu.amp.GradScaler().is_enabled()
    with pytest.warns(FutureWarning), sf.cpu.amp.autocast():
        assert (a @ a.t()).dtype == sf.bfloat16


def test_deprecated_amp_spellings_warn_torchs_words():
    """The FutureWarnings of ``torch.cpu.amp`` / ``torch.cuda.amp`` are torch's text (they
    said ``shardflow.cuda.amp...`` with an aside, so a program's warnings differed)."""
    import warnings

    def messages(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.cpu.amp.autocast()
            lib.cpu.amp.GradScaler()
            lib.cuda.amp.autocast(enabled=False)
            lib.cuda.amp.GradScaler(enabled=False)
        return [f"{w.category.__name__}: {w.message}" for w in caught]

    assert messages(sf) == messages(torch)


def test_cuda_amp_without_cuda_warns_torchs_words():
    """Without CUDA, the "cuda" autocast and GradScaler disable themselves with torch's
    UserWarnings (shardflow's said it in its own words)."""
    import warnings

    if torch.cuda.is_available() or sf.cuda.is_available():
        pytest.skip("CUDA is available: nothing is disabled")

    def messages(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.amp.autocast("cuda")
            lib.autocast("cuda")
            lib.amp.GradScaler("cuda")
            lib.cuda.amp.GradScaler()
        return [f"{w.category.__name__}: {w.message}" for w in caught]

    assert messages(sf) == messages(torch)


def test_autocast_composes_with_the_global_tensor_handler():
    from shardflow.distributed import distribute_tensor, placement, sbp

    p = placement("cpu", [0])
    x = sf.randn(8, 16, placement=p, sbp=sbp.split(0))
    leaf = sf.randn(16, 4, requires_grad=True)
    w = distribute_tensor(leaf, p, sbp.broadcast)  # a new leaf, as PyTorch's
    leaf = w
    with sf.autocast("cpu"):
        y = x @ w
    assert y.dtype == sf.bfloat16 and str(y.sbp) == "(S(0),)"
    y.float().sum().backward()
    assert leaf.grad is not None and leaf.grad.dtype == sf.float32
    assert dispatch._hooks[2] is None and dispatch._hooks[0] is not None, "global handler kept"
    # the values: torch's autocast on the same local tensors
    xt, lt = torch.tensor(x.numpy()), torch.tensor(leaf.detach().numpy(), requires_grad=True)
    with torch.autocast("cpu"):
        yt = xt @ lt
    yt.float().sum().backward()
    _close(_as_np(y), _as_np(yt), "global y")
    _close(_as_np(leaf.grad), _as_np(lt.grad), "grad of the broadcast leaf")
