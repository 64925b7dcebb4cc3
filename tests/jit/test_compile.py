"""``shardflow.compile``: the passes (DCE, CSE, linear bias split, elementwise fusion) on a
small function, guards and retracing, every fallback reason, the Module wrapper, and compiled
vs eager forward on the MLP / CNN / GPT-mini reference workloads (eval, no_grad)."""

import re

import numpy as np
import pytest
import torch

import shardflow as sf
import shardflow.nn.functional as F
from shardflow.bench.workloads import WORKLOADS
from shardflow.jit import compile as sf_compile

from ._fusion import fusion_on, needs_fusion  # only the tests about fused groups need numba


def _fused_groups(compiled) -> int:
    """How many fused groups the last trace made, from the compile log (``explain()``)."""
    counts = re.findall(r"fused (\d+) group", compiled.explain())
    assert counts, f"nothing was traced:\n{compiled.explain()}"
    return int(counts[-1])


# The reference workloads' batches are benchmark-sized (MLP 128, CNN 64, GPT-mini 16 x 128
# tokens); the graphs traced, fused and replayed are the same for a few rows, so the tests
# take the first SMALL_BATCH rows of each batch.
SMALL_BATCH = 4


def _small_batch(wl, seed):
    """The workload's batch for ``seed``, cut to its first SMALL_BATCH rows."""
    return tuple(np.ascontiguousarray(a[:SMALL_BATCH]) for a in wl.make_batch(np.random.default_rng(seed)))


def _f(x, w, b):
    h = x @ w + b  # bias: a trailing-vector operand of the fused group
    y = F.gelu(h) * 2.0 + h.tanh()
    z = F.gelu(h) * 2.0  # the same as in y: CSE
    x.exp()  # unused: DCE
    return y - z.sigmoid() + (h * 0.5).relu() / 3.0


def _f_torch(x, w, b):
    """``_f`` in torch float64: a reference computed by neither the eager ops nor the graph."""
    x, w, b = (torch.from_numpy(a.numpy().astype(np.float64)) for a in (x, w, b))
    h = x @ w + b
    y = torch.nn.functional.gelu(h) * 2.0 + h.tanh()
    z = torch.nn.functional.gelu(h) * 2.0
    return (y - z.sigmoid() + (h * 0.5).relu() / 3.0).numpy()


def _inputs(dtype, M=67, K=32, N=48):
    rng = np.random.default_rng(0)
    return tuple(sf.tensor(rng.standard_normal(s).astype(dtype)) for s in [(M, K), (K, N), (N,)])


@needs_fusion
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_passes_and_fused_kernel_match_eager(dtype):
    cf = sf_compile(_f)
    args = _inputs(dtype)
    with sf.no_grad():
        cf(*args)  # the trace (its result is the eager call's)
        replay = cf(*args)  # the optimised graph with the generated kernel
        ref = _f(*args)
    assert cf.stats["traces"] == 1 and cf.stats["replays"] == 1 and cf.stats["eager"] == 0, cf.explain()
    g = next(iter(cf.cache.values())).graph
    assert g.count("fused") == 1 and g.count("call") == 1  # matmul + one fused group
    log = cf.explain()
    assert "dce removed 1" in log and "cse merged 2" in log and "fused 1 group" in log
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(replay.numpy(), ref.numpy(), **tol)
    np.testing.assert_allclose(replay.numpy(), _f_torch(*args), **tol)
    assert replay.dtype == ref.dtype and not replay.requires_grad


def test_numpy_kernels_mode_compiles_without_fusion(monkeypatch):
    """Without the kernels the graph still runs its passes (DCE, CSE) and replays the
    remaining op calls: the same ops as eager on the same values, so bit for bit equal."""
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numpy")
    cf = sf_compile(_f)
    args = _inputs("float32")
    with sf.no_grad():
        cf(*args)
        out = cf(*args)
        ref = _f(*args)
    assert cf.stats["traces"] == 1 and cf.stats["replays"] == 1 and cf.stats["eager"] == 0, cf.explain()
    g = next(iter(cf.cache.values())).graph
    log = cf.explain()
    assert "dce removed 1" in log and "cse merged 2" in log and _fused_groups(cf) == 0, log
    assert g.count("fused") == 0
    # _f's 15 op calls less the unused exp (DCE) and the repeated gelu(h) * 2.0 (CSE)
    assert "15 op calls" in log, log
    ops = re.findall(r"= (\w+)\(", str(g))
    assert ops == ["matmul", "add", "gelu", "mul", "tanh", "add", "sigmoid", "sub", "mul", "relu",
                   "div", "add"], str(g)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    np.testing.assert_allclose(out.numpy(), _f_torch(*args), rtol=1e-5, atol=1e-5)


def test_guards_retrace_on_new_shape_and_dtype():
    cf = sf_compile(lambda x: (x * 2.0 + 1.0).tanh())
    with sf.no_grad():
        for shape, dtype in [((4, 5), "float32"), ((4, 5), "float32"), ((3, 7), "float32"),
                             ((3, 7), "float64"), ((4, 5), "float32")]:
            x = sf.tensor(np.random.default_rng(1).standard_normal(shape).astype(dtype))
            out = cf(x)
            np.testing.assert_allclose(out.numpy(), np.tanh(x.numpy() * 2 + 1), rtol=1e-5, atol=1e-6)
            assert out.numpy().dtype == np.dtype(dtype)
    assert cf.stats["traces"] == 3 and cf.stats["replays"] == 2


def test_fallback_reasons_are_logged_and_results_stay_eager(monkeypatch, capsys):
    monkeypatch.setenv("SHARDFLOW_DEBUG", "compile")
    x = sf.randn(3, 4, requires_grad=True)

    def inplace(t):
        u = t * 1.0
        u.add_(1.0)
        return u

    def outside(t):
        return t + sf.tensor(np.ones(4, np.float32))  # made outside the dispatcher

    for fn, why in [(inplace, "in-place op 'add_'"), (outside, "made outside the op dispatcher")]:
        c = sf_compile(fn)
        with sf.no_grad():
            out = c(x.detach())
            np.testing.assert_allclose(out.numpy(), x.detach().numpy() + 1.0, rtol=1e-6)
            c(x.detach())
        assert why in c.explain() and c.stats["eager"] == 2 and c.stats["replays"] == 0  # both calls
        with sf.no_grad(), pytest.raises(RuntimeError, match="fullgraph=True"):
            sf_compile(fn, fullgraph=True)(x.detach())
    assert "[shardflow.compile] eager" in capsys.readouterr().err


def test_compiled_module_shares_parameters_and_sees_updates():
    model = sf.nn.Sequential(sf.nn.Linear(8, 16), sf.nn.GELU(), sf.nn.Linear(16, 4))
    cm = sf.compile(model)  # torch.compile's spelling
    assert set(cm.state_dict()) == {"_orig_mod." + k for k in model.state_dict()}
    x = sf.randn(5, 8)
    with sf.no_grad():
        before = cm(x).numpy()
        cm(x)
    opt = sf.optim.SGD(model.parameters(), lr=0.5)
    model(x).sum().backward()
    opt.step()  # in place on the parameters the graph holds
    with sf.no_grad():
        after, ref = cm(x).numpy(), model(x).numpy()
    assert not np.allclose(before, after)
    np.testing.assert_allclose(after, ref, rtol=1e-6, atol=1e-6)
    # `after` came from the traced graph (replayed), not from an eager fallback
    stats = cm._compiled.stats
    assert (stats["traces"], stats["replays"], stats["eager"]) == (1, 2, 0), cm.explain()


@needs_fusion
@pytest.mark.parametrize("key", ["mlp", "cnn", "gpt"])
def test_reference_workloads_compiled_forward_equals_eager(key):
    wl = WORKLOADS[key]
    model = wl.build(sf).eval()
    x = sf.from_numpy(_small_batch(wl, 0)[0])
    cm = sf.compile(model)
    with sf.no_grad():
        ref = model(x).numpy()
        cm(x)
        out = cm(x).numpy()
    assert cm._compiled.stats["replays"] == 1 and cm._compiled.stats["eager"] == 0, cm.explain()
    # every workload has a linear followed by an activation or a residual add: its bias is
    # split off and fused with what follows (MLP 2 groups, CNN 1, GPT-mini 12)
    g = next(iter(cm._compiled.cache.values())).graph
    assert g.count("fused") == {"mlp": 2, "cnn": 1, "gpt": 12}[key], cm.explain()
    # float32 noise scales with the logits' magnitude (GPT-mini's reach about 200)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6 * float(np.abs(ref).max()))


@needs_fusion
def test_autograd_calls_replay_with_the_tape_and_fused_functions():
    x = sf.randn(6, 4, requires_grad=True)
    cf = sf_compile(lambda t: (t * 3.0).tanh() + 1.0)
    for _ in range(2):  # trace, then replay
        x.grad = None
        cf(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 3.0 / np.cosh(3.0 * x.detach().numpy()) ** 2,
                                   rtol=1e-5, atol=1e-6)
    assert cf.stats == {**cf.stats, "traces": 1, "replays": 1, "eager": 0}
    # the group is one autograd Function with generated forward and backward kernels
    assert "[with autograd]" in cf.explain() and "fused 1 group(s) [mul+tanh+add]" in cf.explain()
    assert type(cf(x).grad_fn).__name__ == "FusedFunction"
    with sf.no_grad():  # another guard key: inference (a fused node on raw arrays)
        cf(x)
        cf(x)
    assert cf.stats["traces"] == 2 and "[inference]" in cf.explain()


@pytest.mark.parametrize("key,steps", [("mlp", 3), ("cnn", 3), ("gpt", 3)])
def test_training_steps_with_compiled_model_track_eager(key, steps):
    import torch

    wl = WORKLOADS[key]
    torch.manual_seed(0)
    state = {k: v.detach().numpy() for k, v in wl.build(torch).state_dict().items()}
    runs = []
    for compiled in (False, True):
        model = wl.build(sf)
        model.load_state_dict({k: sf.tensor(v) for k, v in state.items()})
        opt = wl.make_optimizer(sf, model)
        fwd = sf.compile(model) if compiled else model
        losses = []
        for s in range(steps):
            x, y = (sf.from_numpy(a) for a in _small_batch(wl, s))
            opt.zero_grad(set_to_none=True)
            loss = wl.loss(sf, fwd, x, y)
            loss.backward()
            opt.step()
            losses.append(float(loss))
        runs.append(losses)
        if compiled:  # every step after the first ran the traced graph
            stats = fwd._compiled.stats
            assert (stats["replays"], stats["eager"]) == (steps - 1, 0), fwd.explain()
            if fusion_on():  # with FusedFunction groups
                assert _fused_groups(fwd) == {"mlp": 2, "cnn": 1, "gpt": 12}[key], fwd.explain()
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-6)
