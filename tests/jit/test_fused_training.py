"""Elementwise fusion in training graphs (``jit/fused_function.py``): a fused group is one
autograd Function with generated forward and backward kernels. Checked against eager
autograd (float32 1e-5, float64 1e-10), float64 finite differences, the engine workloads'
gradients, and the NumPy-path switch."""

import numpy as np
import pytest

import shardflow as sf
import shardflow.nn.functional as F
from shardflow.bench.workloads import WORKLOADS
from shardflow.jit.fused_function import FusedFunction
from tests.jit.test_compile_step import _batch as _small_batch  # the small models, batches
from tests.jit.test_compile_step import _ce, _gpt_loss
from tests.jit.test_compile_step import _cnn as _small_cnn
from tests.jit.test_compile_step import _gpt as _small_gpt
from tests.jit.test_compile_step import _mlp as _small_mlp

from ._fusion import needs_fusion  # every test here but the NumPy-mode one

TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-10)}


def _graph(cf):
    entries = [e for e in cf.cache.values() if e.graph is not None and e.autograd]
    assert len(entries) == 1, cf.explain()
    return entries[0].graph


def _fused_nodes(g):
    return [n for n in g.nodes if n.kind == "call" and n.name.startswith("fused[")]


def _run(fn, arrays, needs, compiled, weights):  # noqa: ARG001 - compiled: for reading
    """fn's outputs and the gradients of sum(out_k * weights_k) (eager or compiled)."""
    ts = [sf.tensor(a.copy(), requires_grad=r) for a, r in zip(arrays, needs)]
    outs = fn(*ts)
    outs = outs if isinstance(outs, tuple) else (outs,)
    loss = None
    for o, w in zip(outs, weights):
        term = (o * sf.tensor(w)).sum()  # outside the compiled function: not fused
        loss = term if loss is None else loss + term
    loss.backward()
    return [o.detach().numpy() for o in outs], [t.grad.numpy() if t.grad is not None else None
                                                for t in ts], outs


def _check(fn, arrays, needs=None, n_groups=1, dtype=np.float64, weights=None, seed=1,
           all_fused=True):
    needs = needs or [True] * len(arrays)
    cf = sf.compile(fn)
    r = np.random.default_rng(seed)
    if weights is None:
        with sf.no_grad():
            outs = fn(*[sf.tensor(a) for a in arrays])
        weights = [r.standard_normal(o.shape).astype(dtype)
                   for o in (outs if isinstance(outs, tuple) else (outs,))]
    ref_outs, ref_grads, _ = _run(fn, arrays, needs, False, weights)
    for _ in range(2):  # the trace (eager), then a replay of the fused graph
        outs, grads, touts = _run(cf, arrays, needs, True, weights)
    assert cf.stats["replays"] == 1, cf.explain()
    assert len(_fused_nodes(_graph(cf))) == n_groups, cf.explain()
    assert not all_fused or all(n.kind != "call" or n.name.startswith("fused[")
                                for n in _graph(cf).nodes), cf.explain()
    assert not all_fused or any(isinstance(t.grad_fn, FusedFunction) for t in touts), \
        cf.explain()
    for o, ro in zip(outs, ref_outs):
        assert o.dtype == ro.dtype
        np.testing.assert_allclose(o, ro, **TOL[dtype])
    for gr, rg in zip(grads, ref_grads):
        assert (gr is None) == (rg is None)
        if gr is not None:
            assert gr.shape == rg.shape and gr.dtype == rg.dtype
            # float32 bias / 0-d gradients are sums of many rows (as eager's): their rounding
            # scales with the summands, so the absolute tolerance with the gradient's size
            tol = dict(TOL[dtype])
            if dtype == np.float32:
                tol["atol"] = max(tol["atol"], 1e-6 * float(np.max(np.abs(rg))))
            np.testing.assert_allclose(gr, rg, **tol)
    return cf


def _arr(r, shape, dtype, lo=None):
    a = r.standard_normal(shape)
    if lo is not None:
        a = np.abs(a) + lo
    return a.astype(dtype)


# ---------------------------------------------------------------------- hand-written groups
def _bias_act(x, b, c):  # broadcast bias, 0-d operand, number operands
    h = F.gelu(x + b, approximate="tanh") * 2.0 - c
    return F.silu(h) + F.gelu(h) / 3.0


def _multi_out(x, b, c):  # three stored members, all read outside the group
    h = x + b
    y = F.relu(h)
    z = y * c + h.tanh()
    return h, y, z.sigmoid()


def _all_ops(x, p, b, c):  # every fusable op in one chain (one group), domains kept valid
    v = (x * b - 0.5).tanh() * c
    v = (v.exp().log().square() + 0.25).sqrt().rsqrt() / p  # > 0
    v = v ** 1.5 + v ** 2 - v ** -1.0 + (v ** 1) * (v ** 0) + v.pow(3.0) * 0.1
    v = (-v).abs() + x
    v = F.relu(v - 0.3) + F.gelu(v) - F.gelu(v, approximate="tanh") * 0.5
    v = F.silu(v) * F.sigmoid(v) + (2.0 - v).tanh()
    return x * v + p


def _residual(x, h, b):  # x + (h + b): x and h get the incoming gradient itself
    return x + (h + b)


@needs_fusion
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_gelu_silu_with_0d_and_number_operands(dtype):
    r = np.random.default_rng(0)
    _check(_bias_act, [_arr(r, (67, 48), dtype), _arr(r, (48,), dtype), _arr(r, (), dtype)],
           dtype=dtype)


@needs_fusion
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multiple_outputs_each_get_their_incoming_gradient(dtype):
    r = np.random.default_rng(1)
    cf = _check(_multi_out, [_arr(r, (5, 7, 33), dtype), _arr(r, (33,), dtype),
                             _arr(r, (), dtype)], dtype=dtype)
    (node,) = _fused_nodes(_graph(cf))
    assert node.name == "fused[add+relu+mul+tanh+add+sigmoid]"


@needs_fusion
def test_every_fusable_op_forward_and_backward_float64():
    r = np.random.default_rng(2)
    M, N = 41, 29
    arrays = [_arr(r, (M, N), np.float64), _arr(r, (M, N), np.float64, lo=0.3),
              _arr(r, (N,), np.float64), _arr(r, (), np.float64)]
    _check(_all_ops, arrays, dtype=np.float64)


@needs_fusion
def test_every_fusable_op_float32_is_as_accurate_as_eager():
    """The chain is ill-conditioned in float32 (x^-1, rsqrt of exp of log...): fused and eager
    float32 both differ from float64 by up to 2e-4 here, differently. The fused result must
    be as close to the float64 one as eager's is (within 2x, or 1e-5 of each array's size)."""
    r = np.random.default_rng(2)
    M, N = 41, 29
    a64 = [_arr(r, (M, N), np.float64), _arr(r, (M, N), np.float64, lo=0.3),
           _arr(r, (N,), np.float64), _arr(r, (), np.float64)]
    w64 = [r.standard_normal((M, N))]
    t_out, t_grads, _ = _run(_all_ops, a64, [True] * 4, False, w64)
    a32, w32 = [a.astype(np.float32) for a in a64], [w64[0].astype(np.float32)]
    e_out, e_grads, _ = _run(_all_ops, a32, [True] * 4, False, w32)
    cf = sf.compile(_all_ops)
    for _ in range(2):
        f_out, f_grads, touts = _run(cf, a32, [True] * 4, True, w32)
    assert isinstance(touts[0].grad_fn, FusedFunction) and len(_fused_nodes(_graph(cf))) == 1

    def err(a, t):
        return float(np.max(np.abs(a.astype(np.float64) - t))) / float(np.max(np.abs(t)))

    for f, e, t in zip(f_out + f_grads, e_out + e_grads, t_out + t_grads):
        assert f.dtype == np.float32
        assert err(f, t) <= max(2.0 * err(e, t), 1e-5), (err(f, t), err(e, t))


@pytest.mark.parametrize("needs", [[True, False, True], [False, True, False],
                                   [False, False, True]])
@needs_fusion
def test_only_the_inputs_that_need_a_gradient_get_one(needs):
    r = np.random.default_rng(3)
    _check(_bias_act, [_arr(r, (19, 12), np.float64), _arr(r, (12,), np.float64),
                       _arr(r, (), np.float64)], needs=needs)


@needs_fusion
def test_residual_add_hands_the_incoming_gradient_on():
    r = np.random.default_rng(4)
    _check(_residual, [_arr(r, (8, 16, 24), np.float32), _arr(r, (8, 16, 24), np.float32),
                       _arr(r, (24,), np.float32)], dtype=np.float32)


@needs_fusion
def test_an_operand_read_by_several_members_sums_its_gradients():
    r = np.random.default_rng(5)
    _check(lambda x, b: (x.tanh() * b + x) * x - x, [_arr(r, (13, 9), np.float64),
                                                     _arr(r, (9,), np.float64)])


@needs_fusion
def test_relu_gradient_at_zero_is_zero_as_eager():
    x = np.array([[-1.0, 0.0, 2.0, 0.5], [0.25, -0.25, 0.0, 3.0]], np.float32)
    b = np.array([0.0, 0.0, -2.0, -0.5], np.float32)  # x + b == 0 in five places
    w = [np.ones((2, 4), np.float32)]
    cf = _check(lambda x, b: F.relu(x + b) * 3.0, [x, b], dtype=np.float32, weights=w)
    _, grads, _ = _run(cf, [x, b], [True, True], True, w)
    np.testing.assert_array_equal(grads[0], np.where(x + b > 0, 3.0, 0.0))


@needs_fusion
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_matches_the_gelu_kernel(approximate):
    r = np.random.default_rng(6)
    # |x + b| < 4: inside tanh32's clamp, where the kernel's float32 variants agree (beyond
    # it see the next test)
    x = np.clip(_arr(r, (256, 64), np.float32) * 1.5, -2.0, 2.0)
    b = np.clip(_arr(r, (64,), np.float32), -1.9, 1.9)
    w = [_arr(r, (256, 64), np.float32)]
    fn = lambda x, b: F.gelu(x + b, approximate=approximate) * 1.0  # noqa: E731
    _check(fn, [x, b], dtype=np.float32, weights=w)
    # the gelu alone (its kernel) on the same pre-activation: equal to float32 rounding
    t = sf.tensor(x + b, requires_grad=True)
    (F.gelu(t, approximate=approximate) * sf.tensor(w[0])).sum().backward()
    cf = sf.compile(fn)
    for _ in range(2):
        _, grads, _ = _run(cf, [x, b], [True, True], True, w)
    np.testing.assert_allclose(grads[0], t.grad.numpy(), rtol=2e-6, atol=2e-6)


@needs_fusion
def test_tanh_gelu_derivative_is_accurate_where_it_saturates():
    """float32 tanh-GELU's derivative against float64 over |x| up to 1000: within tanh32's
    error where it bends, exactly 0 / 1 beyond its clamp (the rational's residue there grew
    like x^3: 28.9 instead of 1 at x = 1000)."""
    x = np.concatenate([np.linspace(-12, 12, 4001), [-1000.0, -50.0, 50.0, 1000.0]])
    x = x.astype(np.float32).reshape(1, -1)
    zero = np.zeros(x.shape[1], np.float32)
    fn = lambda x, b: F.gelu(x + b, approximate="tanh") * 1.0  # noqa: E731
    # the fused graph replayed directly: compile()'s check against eager would send this
    # key to eager wherever the eager kernel keeps the residue
    from shardflow.jit import executor, passes
    from shardflow.jit.trace import trace

    ts = [sf.tensor(x, requires_grad=True), sf.tensor(zero, requires_grad=True)]
    g, _ = trace(fn, tuple(ts), {})
    passes.dce(g)
    assert len(passes.fuse_for_training(g, tuple(ts))[1]) == 1
    executor.run(g, tuple(ts)).sum().backward()
    grads = [ts[0].grad.numpy()]
    v = x.astype(np.float64)
    c, a = np.sqrt(2.0 / np.pi), 0.044715
    th = np.tanh(c * (v + a * v ** 3))
    ref = 0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * c * (1.0 + 3.0 * a * v * v)
    np.testing.assert_allclose(grads[0], ref, rtol=0, atol=2e-5)
    np.testing.assert_array_equal(grads[0][0, -4:], [0.0, 0.0, 1.0, 1.0])


def _random_chain(r, n_ops):
    """A random straight-line group over x (M, N), p (M, N) > 0, b (N,), c (): a function of
    tensors returning two of its values (so two members are stored)."""
    steps = []
    for k in range(n_ops):
        op = r.choice(["add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "tanh",
                       "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "square", "abs", "pow"])
        steps.append((op, int(r.integers(0, k + 4)), int(r.integers(0, k + 4)),
                      float(r.choice([0.5, 1.5, 2.0, 3.0, -1.0])), bool(r.integers(0, 2))))

    def fn(x, p, b, c):
        vals = [x, p, b, c]
        for op, i, j, num, use_num in steps:
            a = vals[i]
            o = num if use_num else vals[j]
            pos = (a * a + 0.5)  # a positive operand for log/sqrt/rsqrt/pow/div
            if op in ("add", "sub", "mul"):
                v = getattr(sf, op)(a, o)
            elif op == "div":
                v = a / (o * o + 1.0) if not use_num else a / num
            elif op in ("log", "sqrt", "rsqrt"):
                v = getattr(sf, op)(pos)
            elif op == "pow":
                v = pos ** num
            elif op == "exp":
                v = (a.tanh() * 2.0).exp()
            elif op == "gelu":
                v = F.gelu(a)
            elif op == "gelu_tanh":
                v = F.gelu(a, approximate="tanh")
            else:
                v = getattr(F, op)(a) if op in ("relu", "silu", "sigmoid") else getattr(sf, op)(a)
            if v.shape != x.shape:
                v = v + x  # a value of the group's shape
            vals.append(v)
        return vals[-1], vals[-2] * 0.5 + vals[-1]

    return fn


@needs_fusion
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(5))
def test_random_groups_match_eager(dtype, seed):
    r = np.random.default_rng(100 + seed)
    fn = _random_chain(r, int(r.integers(4, 12)))
    M, N = int(r.integers(1, 40)), int(r.integers(1, 40))
    arrays = [_arr(r, (M, N), dtype), _arr(r, (M, N), dtype, lo=0.3), _arr(r, (N,), dtype),
              _arr(r, (), dtype)]
    if dtype == np.float32:  # long chains of float32 ops (eager) vs float64 locals (fused)
        cf = sf.compile(fn)
        w = [r.standard_normal((M, N)).astype(dtype) for _ in range(2)]
        ref_outs, ref_grads, _ = _run(fn, arrays, [True] * 4, False, w)
        for _ in range(2):
            outs, grads, _ = _run(cf, arrays, [True] * 4, True, w)
        assert _fused_nodes(_graph(cf)), cf.explain()
        for a, b in zip(outs + grads, ref_outs + ref_grads):
            assert (a is None) == (b is None)
            if a is None:
                continue
            scale = max(1.0, float(np.max(np.abs(b))))
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * scale)
    else:
        cf = sf.compile(fn)
        _check(fn, arrays, n_groups=len(_fused_nodes(_graph(_prime(cf, arrays)))), dtype=dtype,
               all_fused=False)


def _prime(cf, arrays):
    ts = [sf.tensor(a, requires_grad=True) for a in arrays]
    cf(*ts)
    return cf


@needs_fusion
def test_fused_function_float64_finite_differences():
    r = np.random.default_rng(7)
    arrays = [_arr(r, (6, 5), np.float64), _arr(r, (6, 5), np.float64, lo=0.3),
              _arr(r, (5,), np.float64), _arr(r, (), np.float64)]
    fn = _all_ops
    cf = sf.compile(fn)
    w = [r.standard_normal((6, 5))]
    for _ in range(2):
        _, grads, touts = _run(cf, arrays, [True] * 4, True, w)
    assert isinstance(touts[0].grad_fn, FusedFunction)

    def loss(arrs):
        with sf.no_grad():
            out = cf(*[sf.tensor(a) for a in arrs]).numpy()
        return float((out * w[0]).sum())

    eps = 1e-6
    for k, a in enumerate(arrays):
        num = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi = [x.copy() for x in arrays]
            lo = [x.copy() for x in arrays]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            num[idx] = (loss(hi) - loss(lo)) / (2 * eps)
        np.testing.assert_allclose(grads[k], num, rtol=1e-6, atol=1e-7, err_msg=f"input {k}")


def test_numpy_kernels_mode_means_no_fusion_in_training_graphs(monkeypatch):
    monkeypatch.setenv("SHARDFLOW_KERNELS", "numpy")
    r = np.random.default_rng(8)
    cf = sf.compile(_bias_act)
    arrays = [_arr(r, (7, 6), np.float32), _arr(r, (6,), np.float32), _arr(r, (), np.float32)]
    w = [np.ones((7, 6), np.float32)]
    ref = _run(_bias_act, arrays, [True] * 3, False, w)
    for _ in range(2):
        got = _run(cf, arrays, [True] * 3, True, w)
    assert not _fused_nodes(_graph(cf)) and "fused 0 group" in cf.explain()
    for a, b in zip(got[0] + got[1], ref[0] + ref[1]):
        np.testing.assert_array_equal(a, b)


def _workload_twins(key):
    """An engine workload eagerly and as ``compile(model)``, same weights and batch, each
    through forward and backward (the compiled one twice: trace, then the fused replay).
    Returns (eager model, compiled model's module, compiled wrapper, eager loss, its loss)."""
    wl = WORKLOADS[key]
    sf.manual_seed(0)
    a, b = wl.build(sf), wl.build(sf)
    b.load_state_dict({k: sf.tensor(v.numpy().copy()) for k, v in a.state_dict().items()})
    cm = sf.compile(b)
    x, y = (sf.from_numpy(t) for t in wl.make_batch(np.random.default_rng(0)))
    ref = wl.loss(sf, a, x, y)
    ref.backward()
    for _ in range(2):
        for p in b.parameters():
            p.grad = None
        loss = wl.loss(sf, cm, x, y)
        loss.backward()
    return a, b, cm, ref, loss


@needs_fusion
@pytest.mark.parametrize("key", ["mlp", "cnn", "gpt"])
def test_compiled_workload_training_forward_and_backward_equal_eager(key):
    a, b, cm, ref, loss = _workload_twins(key)
    assert cm._compiled.stats["replays"] == 1, cm.explain()
    g = _graph(cm._compiled)
    assert len(_fused_nodes(g)) == {"mlp": 2, "cnn": 1, "gpt": 12}[key], cm.explain()
    np.testing.assert_allclose(float(loss), float(ref), rtol=1e-6)
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        scale = float(np.max(np.abs(p.grad.numpy()))) + 1e-30
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-4,
                                   atol=1e-5 * scale, err_msg=name)


# ---------------------------------------------------------------------- compile_step's plan
_SMALL = {"mlp": (_small_mlp, _ce), "cnn": (_small_cnn, _ce), "gpt": (_small_gpt, _gpt_loss)}


def _plan_pair(kind, make_opt):
    """An eager model and a StepPlan over its copy's fused forward graph (what compile_step
    builds with ``passes.fuse_for_training`` after DCE and CSE)."""
    from shardflow.jit import passes
    from shardflow.jit.step_plan import StepPlan
    from shardflow.jit.trace import trace

    build, loss_fn = _SMALL[kind]
    sf.manual_seed(0)
    a, b = build(), build()
    b.load_state_dict({k: sf.tensor(v.numpy().copy()) for k, v in a.state_dict().items()})
    oa, ob = make_opt(a.parameters()), make_opt(b.parameters())
    x, y = _small_batch(kind, 0)
    g, _ = trace(lambda *t: loss_fn(b, *t), (x, y), {id(p): p for p in b.parameters()})
    passes.dce(g)
    passes.cse(g)
    _, fused = passes.fuse_for_training(g, (x, y))
    plan = StepPlan(g, [p for grp in ob.param_groups for p in grp["params"]], ob)
    return a, b, oa, plan, loss_fn, fused, _small_batch


@needs_fusion
@pytest.mark.parametrize("kind,groups", [("mlp", 2), ("cnn", 1), ("gpt", 6)])
def test_step_plan_over_fused_graph_tracks_eager_for_ten_steps(kind, groups):
    def make_opt(ps):
        return sf.optim.SGD(ps, lr=0.05, momentum=0.9)

    a, b, oa, plan, loss_fn, fused, batch = _plan_pair(kind, make_opt)
    assert len(fused) == groups
    for s in range(10):
        x, y = batch(kind, s)
        oa.zero_grad(set_to_none=True)
        ref = loss_fn(a, x, y)
        ref.backward()
        oa.step()
        loss = plan.run((x, y))
        np.testing.assert_allclose(float(loss), float(ref), rtol=1e-5)
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
            scale = float(np.max(np.abs(p.grad.numpy())))
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-4,
                                       atol=1e-5 * scale, err_msg=name)
    # the plan calls each fused group's FusedFunction.backward directly (a "fn" tape entry)
    from shardflow.autograd import _wrap
    from shardflow.jit.step_plan import _tape_entry

    for n in plan.g.nodes:
        if n.kind == "call" and n.name.startswith("fused["):
            grp = n.target.group
            leaves = {}
            args = []
            for r, shp in zip(n.args, grp.ext_shapes):
                lt = _wrap(np.ones(shp, grp.dtype), True)
                leaves[id(lt)] = (r, lt)
                args.append(lt)
            assert _tape_entry(n.target(*args), leaves)[0] == "fn", n.name
    if kind != "gpt":
        assert plan.stats["engine_backward"] == 0, plan.stats


@needs_fusion
def test_arithmetic_groups_give_eager_bits():
    """float32 members are rounded as the eager ops store them and bias gradients are summed
    row by row in float32 as NumPy's ``sum(axis=0)``: bias + ReLU (MLP) and bias + residual
    add groups give eager's forward and gradients bit for bit."""
    a, b, cm, ref, loss = _workload_twins("mlp")
    assert len(_fused_nodes(_graph(cm._compiled))) == 2
    assert float(loss) == float(ref)
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy())
    r = np.random.default_rng(9)
    arrays = [_arr(r, (4, 33, 64), np.float32), _arr(r, (4, 33, 64), np.float32),
              _arr(r, (64,), np.float32)]
    w = [_arr(r, (4, 33, 64), np.float32)]
    e_out, e_grads, _ = _run(_residual, arrays, [True] * 3, False, w)
    cf = sf.compile(_residual)
    for _ in range(2):
        f_out, f_grads, _ = _run(cf, arrays, [True] * 3, True, w)
    for f, e in zip(f_out + f_grads, e_out + e_grads):
        np.testing.assert_array_equal(f, e)


@needs_fusion
@pytest.mark.parametrize("needs", [[True, True], [False, True]])
def test_serial_backward_sums_bias_gradients_in_its_one_pass(needs):
    """Serial builds (2-CPU machines, small groups) add each row into the bias gradient inside
    the element loop: one pass over the gradient and no blocked column-sum loop (whose slices
    made the cold compile about 4x slower). The sum keeps NumPy's row order: the bias
    gradient is ``sum(axis=0)`` of the per-element gradients bit for bit, also when only the
    bias needs one (summed from its temporary array's element as it is stored)."""
    from shardflow.jit import codegen

    r = np.random.default_rng(11)
    x, b = _arr(r, (64, 48), np.float32), _arr(r, (48,), np.float32)
    w = [_arr(r, (64, 48), np.float32)]
    fn = lambda x, b: F.relu(x + b) * 3.0  # noqa: E731
    cf = sf.compile(fn)
    for _ in range(2):
        _, grads, _ = _run(cf, [x, b], needs, True, w)
    group = _fused_nodes(_graph(cf))[0].target.group
    assert not group.parallel and codegen.parallel_for((64, 48)) is False
    src = group.backward_sources[tuple(needs)]
    assert src.count("for i in") == 1 and "prange(C)" not in src, src
    # the per-element gradient of x (the [True, True] mask's stored array), summed by NumPy
    full = grads
    if not needs[0]:
        cf2 = sf.compile(fn)
        for _ in range(2):  # the trace (eager), then the fused replay
            full = _run(cf2, [x, b], [True, True], True, w)[1]
    np.testing.assert_array_equal(grads[1], full[0].sum(axis=0))
    _, e_grads, _ = _run(fn, [x, b], needs, False, w)  # eager, to its rounding
    np.testing.assert_allclose(grads[1], e_grads[1], rtol=1e-5, atol=1e-4)
