"""The per-op path (issue 24, goal 3): what its shortcuts must keep.

* ``Function.apply`` and its two-Tensor form ``apply_binary`` build the same node (edges,
  ``needs_input_grad``, saved version counters, output shape) and the same result;
* grad mode is read through a count of threads that have it off, and stays per thread;
* ``dispatch.OPS`` holds the plain functions while no hook is installed and the routed forms
  while one is (the profiler and the tracer still see ``x * y``);
* registered ops are Tensor methods without ``Tensor.__getattr__`` (whose presence disabled
  CPython's attribute specialisation for every Tensor);
* the in-place check still names the tensor; tensors hash by identity.
"""

import operator
import threading

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.autograd import Function, dispatch, grad_mode
from shardflow.autograd.function import apply_binary
from shardflow.ops import arithmetic


def _t(seed, shape=(3, 4), requires_grad=True):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return sf.tensor(x, requires_grad=requires_grad)


def _node(t):
    fn = t.grad_fn
    edges = [None if e is None else (e[0], e[1]) for e in fn.next]
    return (type(fn), edges, fn.needs_input_grad, fn._saved_versions, fn._out_shape, fn._out_meta)


@pytest.mark.parametrize("cls", [arithmetic.Mul, arithmetic.Add, arithmetic.Sub, arithmetic.Div])
@pytest.mark.parametrize("grads", [(True, True), (True, False), (False, True)])
def test_apply_binary_builds_the_node_apply_builds(cls, grads):
    a0, b0 = _t(0), _t(1, (4,))
    a = a0 * 1.0 if grads[0] else a0.detach()  # a non-leaf producer when it needs a gradient
    b = b0 if grads[1] else b0.detach()
    # when only one input needs a gradient, binary_operator makes the class's partial node
    # (Mul keeps only the operand that gradient reads, as torch does)
    only_a, only_b = getattr(cls, "partial_nodes", (cls, cls))
    node_cls = cls if all(grads) else only_a if grads[0] else only_b
    generic, binary = node_cls.apply(a, b), apply_binary(cls, a, b)
    np.testing.assert_array_equal(generic.numpy(), binary.numpy())
    assert _node(generic) == _node(binary)
    assert generic._version_counter is not binary._version_counter and binary._version == 0
    generic.sum().backward(retain_graph=True)
    ga = None if a._grad is None else a._grad.numpy().copy()  # (.grad of a non-leaf warns)
    gb0 = None if b0.grad is None else b0.grad.numpy().copy()
    binary.sum().backward()
    if grads[1]:
        np.testing.assert_array_equal(b0.grad.numpy(), 2 * gb0)
    assert ga is None  # a is a non-leaf or a detached tensor: no .grad either way


def test_apply_binary_without_grad_records_nothing():
    a, b = _t(0, requires_grad=False), _t(1, requires_grad=False)
    out = apply_binary(arithmetic.Mul, a, b)
    assert out.grad_fn is None and not out.requires_grad
    with sf.no_grad():
        out = apply_binary(arithmetic.Mul, _t(0), _t(1))
    assert out.grad_fn is None and not out.requires_grad


def test_binary_fast_path_keeps_promotion_and_broadcast_gradients_like_torch():
    """Same-dtype Tensors take the fast path; other operands go through promote."""
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal((3,)).astype(np.float64)
    for op in ("mul", "add", "sub", "div"):
        a, b = sf.tensor(x, requires_grad=True), sf.tensor(w, requires_grad=True)
        ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
        y, ty = getattr(sf, op)(a, b), getattr(torch, op)(ta, tb)
        assert str(y.dtype).split(".")[-1] == str(ty.dtype).split(".")[-1]
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
        assert b.grad.dtype == sf.float64


# ------------------------------------------------------------------------ grad mode


def test_grad_off_count_follows_blocks_and_plain_calls():
    assert grad_mode._off[0] == 0
    with sf.no_grad():
        assert grad_mode._off[0] == 1
        with sf.no_grad():  # already off in this thread: counted once
            assert grad_mode._off[0] == 1
        with sf.enable_grad():
            assert grad_mode._off[0] == 0
            assert (_t(0) * _t(1)).requires_grad
        assert grad_mode._off[0] == 1
        assert not (_t(0) * _t(1)).requires_grad
    assert grad_mode._off[0] == 0
    sf.set_grad_enabled(False)
    try:
        assert grad_mode._off[0] == 1 and not (_t(0) * _t(1)).requires_grad
    finally:
        sf.set_grad_enabled(True)
    assert grad_mode._off[0] == 0


def test_another_threads_no_grad_does_not_stop_this_thread_recording():
    """While thread B is inside no_grad the count is 1: this thread then reads its own flag
    (on) and still records; B's ops record nothing."""
    inside, leave = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with sf.no_grad():
            seen["b"] = (_t(0) * _t(1)).requires_grad
            inside.set()
            leave.wait(10)

    th = threading.Thread(target=worker)
    th.start()
    assert inside.wait(10)
    assert grad_mode._off[0] == 1
    assert (_t(0) * _t(1)).requires_grad and sf.is_grad_enabled()
    leave.set()
    th.join(10)
    assert seen["b"] is False and grad_mode._off[0] == 0


# ------------------------------------------------------------------------ dispatch


def test_ops_table_holds_plain_functions_until_a_hook_is_installed():
    assert dispatch.OPS["mul"] is arithmetic.mul.__wrapped__ is dispatch.plain("mul")
    seen = []

    def hook(name, func, args, kwargs):
        seen.append(name)
        return func(*args, **kwargs)

    dispatch.set_op_profiler(hook)
    try:
        assert dispatch.OPS["mul"] is arithmetic.mul
        _t(0) * _t(1)
    finally:
        dispatch.set_op_profiler(None)
    assert seen == ["mul"]
    assert dispatch.OPS["mul"] is arithmetic.mul.__wrapped__


def test_binary_operators_are_the_ops_themselves_and_follow_the_hooks():
    """``Tensor.__mul__`` is ``OPS["mul"]`` (no method frame between), before, during and
    after a hook; a subclass's own operator and ``super()`` still work."""
    for dunder, name in {"__add__": "add", "__sub__": "sub", "__mul__": "mul",
                         "__truediv__": "div", "__matmul__": "matmul"}.items():
        assert dispatch.operator_methods()[dunder] == name
        assert vars(sf.Tensor)[dunder] is dispatch.operator_form(name)
    assert sf.Tensor.__matmul__ is dispatch.OPS["matmul"]  # an op without a two-argument form
    assert sf.Tensor.__mul__ is dispatch._OPERATOR_FORMS["mul"]
    seen = []
    dispatch.set_op_profiler(lambda name, func, args, kwargs: seen.append(name) or func(*args, **kwargs))
    try:
        assert vars(sf.Tensor)["__truediv__"] is dispatch.OPS["div"] is sf.div  # routed
        x, w = _t(0), _t(1, (4, 2))
        ((x + x - x) / x) @ w
    finally:
        dispatch.set_op_profiler(None)
    assert seen == ["add", "sub", "div", "matmul"]
    assert vars(sf.Tensor)["__truediv__"] is dispatch.operator_form("div") is not sf.div

    class Doubled(sf.Tensor):
        def __mul__(self, other):
            return super().__mul__(other) * 2

    a = _t(2)
    d = Doubled(a.detach().numpy())
    np.testing.assert_allclose((d * a).numpy(), a.numpy() ** 2 * 2, rtol=1e-6)
    ta = torch.tensor(a.detach().numpy(), requires_grad=True)
    (ta * ta).sum().backward()
    (a * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


def test_an_op_registered_again_without_an_operator_form_is_what_its_operator_calls():
    x, y = _t(0), _t(1)

    @dispatch.register("sub", "subtract")
    def replaced(input, other):
        return sf.tensor([42.0])

    try:
        assert (x - y).tolist() == [42.0]
        assert vars(sf.Tensor)["__sub__"] is replaced.__wrapped__
    finally:  # the original op, its routed form and methods as they were
        dispatch.register("sub", "subtract", operator=arithmetic._sub_dunder)(arithmetic.sub)
        for name in ("sub", "subtract"):
            dispatch._ROUTED[name] = arithmetic.sub
            dispatch._install_method(name, arithmetic.sub)
    assert vars(sf.Tensor)["__sub__"] is arithmetic._sub_dunder
    np.testing.assert_array_equal((x - y).numpy(), x.numpy() - y.numpy())


@pytest.mark.parametrize("apply", [operator.add, operator.sub, operator.mul, operator.truediv])
def test_binary_operators_promote_and_divide_like_torch(apply):
    """The operator forms take their direct path only for same-dtype Tensors (floating ones
    for ``/``); every other operand pair goes through the op's promotion, as in torch."""
    f32 = np.array([1.5, -2.0, 3.0], np.float32)
    ints = np.array([3, 4, 5])
    pairs = [(f32, f32), (f32, f32.astype(np.float64)), (f32, np.array(2.0)), (f32, 2.0), (f32, 3),
             (ints, ints - 1), (ints, 2.5), (f32.astype(np.float16), f32)]
    for xa, ya in pairs:
        results = []
        for lib in (sf, torch):
            y = lib.tensor(ya) if isinstance(ya, np.ndarray) else ya
            results.append((apply(lib.tensor(xa), y), apply(y, lib.tensor(xa))))
        for got, want in zip(*results):
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (xa.dtype, ya)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-3)


_UFUNCS = {arithmetic.Add: np.add, arithmetic.Sub: np.subtract, arithmetic.Mul: np.multiply,
           arithmetic.Div: np.divide}


@pytest.mark.parametrize("cls", list(_UFUNCS))
def test_forward_with_an_array_operand_keeps_numpys_dtype_as_as_dtype_of_does(cls):
    """The arithmetic forwards skip ``as_dtype_of`` when both operands are NumPy arrays:
    for every pair of dtypes (bfloat16 included) it would have kept NumPy's result (or
    raised, for pairs promotion never lets reach a forward)."""
    from shardflow.backend import dtypes
    from shardflow.ops._util import as_dtype_of

    kinds = [dtypes.bfloat16, sf.float16, sf.float32, sf.float64, sf.int8, sf.uint8, sf.int32,
             sf.int64, sf.bool, sf.complex64]
    checked = 0
    for da, db in [(p, q) for p in kinds for q in kinds]:
        a = sf.ones(3, dtype=da).array
        for b in (sf.ones(3, dtype=db).array, sf.ones((), dtype=db).array):
            try:
                expected = as_dtype_of(_UFUNCS[cls](a, b), a, b)
            except Exception:
                continue  # NumPy or as_dtype_of refuses the pair (not reachable after promote)
            assert cls().forward(a, b).dtype == expected.dtype, (da, db, b.ndim)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("apply", [operator.mul, operator.truediv])
def test_broadcast_gradients_of_mul_and_div_match_torch(apply):
    """Mul/Div backward compare each input's shape with the node's output shape (the
    gradient's): rank-only and size differences are both summed down, as torch does."""
    rng = np.random.default_rng(5)
    for sa, sb in [((2, 3), (3,)), ((3,), (2, 3)), ((1, 3), (3,)), ((3,), (1, 3)), ((2, 1), (1, 3)),
                   ((), (3,)), ((3,), ()), ((2, 3), (2, 3))]:
        xa = rng.standard_normal(sa).astype(np.float32)
        ya = rng.uniform(0.5, 2.0, sb).astype(np.float32)
        grads = []
        for lib in (sf, torch):
            x, y = lib.tensor(xa, requires_grad=True), lib.tensor(ya, requires_grad=True)
            apply(x, y).sum().backward()
            grads.append((x.grad.numpy(), y.grad.numpy()))
        for got, want in zip(*grads):
            assert got.shape == want.shape, (sa, sb)
            np.testing.assert_allclose(got, want, rtol=1e-5)


def test_registered_ops_are_methods_without_getattr():
    assert "__getattr__" not in vars(sf.Tensor)
    x = _t(0)
    np.testing.assert_allclose(x.exp().numpy(), np.exp(x.numpy()), rtol=1e-6)
    assert x.sum(1).shape == (3,)
    assert sf.Tensor.exp is sf.exp  # the routed function: a global handler sees x.exp()
    assert "exp" in dispatch.method_names() and "add" not in dispatch.method_names()
    with pytest.raises(AttributeError, match="has no attribute 'no_such_op'"):
        x.no_such_op()


def test_an_op_registered_later_becomes_a_method_and_spelled_out_methods_win():
    @dispatch.register("_test_only_double")
    def double(t):
        return t * 2

    @dispatch.register("element_size")  # tensor.py spells this method out: it must stay
    def not_element_size(t):
        raise AssertionError("Tensor.element_size was replaced")

    try:
        x = _t(0)
        np.testing.assert_array_equal(x._test_only_double().numpy(), x.numpy() * 2)
        assert x.element_size() == 4
    finally:
        for name in ("_test_only_double", "element_size"):
            for table in (dispatch.OPS, dispatch._PLAIN, dispatch._ROUTED):
                table.pop(name, None)
        delattr(sf.Tensor, "_test_only_double")
        dispatch._installed_methods.discard("_test_only_double")


def test_global_methods_without_a_placement_say_what_is_missing():
    with pytest.raises(RuntimeError, match=r"to_global\(\) works on global tensors, which need a placement"):
        _t(0).to_global()


# ------------------------------------------------------------------------ checks


def test_inplace_check_names_the_saved_input_and_its_shape():
    a = _t(0)
    b = a * 1.0
    c = b * a  # Mul saves both inputs; input 0 is b
    with sf.no_grad():
        b.mul_(2)
    with pytest.raises(RuntimeError, match=r"shape \(3, 4\) \(input 0\) saved by MulBackward0 is at "
                                           r"version 1; expected version 0"):
        c.sum().backward()


def test_output_saved_by_its_function_is_checked_too():
    x = _t(0)
    y = x.exp()  # Exp saves its output
    with sf.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match=r"\(output 0\) saved by"):
        y.sum().backward()


def test_tensors_hash_by_identity():
    a, b = _t(0), _t(0)
    assert hash(a) != hash(b) and hash(a) == hash(a)
    assert {a: 1, b: 2}[a] == 1


class _Pair(Function):
    """A user Function with two outputs and a non-Tensor argument (the generic path)."""

    def forward(self, x, k):
        return x * k, x + k

    def backward(self, g1, g2):
        return g1 * 2 + g2, None


def test_generic_apply_with_numbers_and_two_outputs():
    x = _t(0)
    y1, y2 = _Pair.apply(x, 2.0)
    assert y1.grad_fn is y2.grad_fn and y1.grad_fn.needs_input_grad == (True, False)
    (y1.sum() + y2.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4), 3.0), rtol=1e-6)


# ------------------------------------------------------------------ packed edges, shapes
def test_edges_are_packed_and_next_gives_the_pairs():
    """A node stores the leaf, the producer (its output 0) or a pair (a later output) per
    edge; ``next`` gives ``(node, output number)`` pairs as before, and backward through
    each kind matches torch."""
    xv = np.random.default_rng(4).standard_normal(6).astype(np.float32)
    wv = np.random.default_rng(5).standard_normal(3).astype(np.float32)
    x, w = sf.tensor(xv, requires_grad=True), sf.tensor(wv, requires_grad=True)
    first, second = x.split(3)
    y = first * w  # producer output 0, then a leaf
    z = w * second  # a leaf, then producer output 1
    assert y.grad_fn._edges == (first.grad_fn, w)
    assert z.grad_fn._edges == (w, (second.grad_fn, 1))
    assert y.grad_fn.next == ((first.grad_fn, 0), (w, 0))
    assert z.grad_fn.next == ((w, 0), (second.grad_fn, 1))
    assert sf.mul(first.detach(), w).grad_fn.next == (None, (w, 0))
    (y.sum() + z.sum() * 2).backward()

    tx, tw = torch.tensor(xv, requires_grad=True), torch.tensor(wv, requires_grad=True)
    tf, ts = tx.split(3)
    ((tf * tw).sum() + (tw * ts).sum() * 2).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)


def test_a_chain_leaves_at_most_four_collector_tracked_objects_per_op():
    """Every object the cyclic garbage collector tracks and the graph keeps makes each
    collection longer (7 per op before the edges were packed and shapes shared: a fifth of
    a 16-element op). Counted with the collector off: the node, its edge tuple, its saved
    version tuple and the output's version counter."""
    import gc

    b = _t(1, (16,))
    y = _t(0, (16,)) * b
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = gc.get_count()[0]
        for _ in range(200):
            y = y * b
        per_op = (gc.get_count()[0] - before) / 200
    finally:
        if enabled:
            gc.enable()
    assert per_op <= 4.05, per_op


def test_output_shapes_are_shared_and_the_table_stays_bounded(monkeypatch):
    from shardflow.autograd import function

    a, b = _t(0, (2, 3)), _t(1, (2, 3))
    assert (a * b).grad_fn._out_shape is (b * a).grad_fn._out_shape == (2, 3)
    monkeypatch.setattr(function, "_MAX_SHAPES", 3)
    monkeypatch.setattr(function, "_SHAPES", {})
    for n in range(1, 8):
        x = _t(n, (n,))
        y = x * x
        assert y.grad_fn._out_shape == (n,) and len(function._SHAPES) <= 3
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy(), rtol=1e-6)
