"""torch.cond / torch.while_loop (eager), torch.get_device_module and the torch.sym_* helpers
against torch 2.13. (torch routes a tensor `pred` through torch.compile, so those cases are
compared with the branch torch's eager path would take and with torch's own argument checks.)"""

import math

import numpy as np
import pytest
import torch

import shardflow as sf


def test_cond_runs_the_branch_and_its_gradient_flows():
    for pred in (True, False, 1, 0.0, sf.tensor(True), sf.tensor([False]), sf.tensor(2.0) > 1):
        x = sf.tensor([1.0, 2.0], requires_grad=True)
        xt = torch.tensor([1.0, 2.0], requires_grad=True)
        out = sf.cond(pred, lambda a: a.sin(), lambda a: a.cos(), (x,))
        take = bool(pred.item()) if isinstance(pred, sf.Tensor) else bool(pred)
        ref = torch.cond(take, lambda a: a.sin(), lambda a: a.cos(), (xt,))
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
        out.sum().backward()
        ref.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    pair = sf.cond(True, lambda a, b: (a + b, a * b), lambda a, b: (a, b), [sf.ones(2), {"k": sf.ones(2)}["k"]])
    assert [p.tolist() for p in pair] == [[2.0, 2.0], [1.0, 1.0]]
    assert sf.cond(False, lambda: 1, lambda: 2) == torch.cond(False, lambda: 1, lambda: 2) == 2


@pytest.mark.parametrize("args, error, message", [
    ((lambda lib: lib.tensor([True, False]), "f", "f", "x"), RuntimeError,
     r"Expected pred to be bool or single-element tensor, but got tensor\(\[ True, False\]\)\."),
    ((lambda lib: "yes", "f", "f", "x"), RuntimeError, "Expected pred to be bool or tensor, but got yes."),
    ((lambda lib: lib.tensor(True), 1, "f", "x"), RuntimeError, "Expect both branches to be callable."),
    ((lambda lib: lib.tensor(True), "f", "f", 1.5), RuntimeError, "Expect operands to be a tuple of possibly nested"),
    ((lambda lib: lib.tensor(True), "f", "f", (1.5,)), RuntimeError, "only consists of tensor leaves, but got"),
])
def test_cond_argument_errors_match_torch(args, error, message):
    for lib in (sf, torch):
        pred, t, f, ops = args[0](lib), args[1], args[2], args[3]
        t = (lambda a: a) if t == "f" else t
        f = (lambda a: a) if f == "f" else f
        ops = (lib.ones(1),) if ops == "x" else ops
        with pytest.raises(error, match=message):
            lib.cond(pred, t, f, ops)


def _loop(lib, x):
    return lib.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * x), (lib.tensor(0), x * 1))


def test_while_loop_values_and_gradients():
    x = sf.tensor(1.5, requires_grad=True)
    i, s = _loop(sf, x)
    assert int(i) == 3 and math.isclose(float(s), 1.5 ** 4, rel_tol=1e-6)
    s.backward()
    assert math.isclose(float(x.grad), 4 * 1.5 ** 3, rel_tol=1e-6)
    # the body never runs: the inputs come back as copies
    start = sf.tensor(5)
    (out,) = sf.while_loop(lambda i: i < 3, lambda i: (i + 1,), [start])
    assert int(out) == 5 and out is not start
    (n, k) = sf.while_loop(lambda i, k: k < 4, lambda i, k: (i * 2, k + 1), (sf.tensor(1), 0))
    assert int(n) == 16 and k == 4


def test_while_loop_errors_are_torchs():
    with pytest.raises(RuntimeError, match="Expect cond_fn and body_fn to be callable."):
        sf.while_loop(1, lambda i: (i,), (sf.tensor(0),))
    with pytest.raises(AssertionError, match="can only be of"):
        sf.while_loop(lambda i: i < 3, lambda i: (i + 1,), (1.5,))
    with pytest.raises(RuntimeError, match="cond_fn must return a boolean scalar tensor or a boolean but got 5"):
        sf.while_loop(lambda i: 5, lambda i: (i + 1,), (sf.tensor(0),))
    with pytest.raises(AssertionError, match="body_fn should return a tuple but got"):
        sf.while_loop(lambda i: i < 3, lambda i: i + 1, (sf.tensor(0),))
    with pytest.raises(AssertionError, match="same number of elements as carried_inputs, got 2 vs 1"):
        sf.while_loop(lambda i: i < 3, lambda i: (i + 1, i), (sf.tensor(0),))
    with pytest.raises(RuntimeError, match="carried_inputs must be a tuple or list"):
        sf.while_loop(lambda i: i < 3, lambda i: (i + 1,), sf.tensor(0))


def test_get_device_module_like_torch():
    assert sf.get_device_module() is sf.cpu and torch.get_device_module() is torch.cpu
    assert sf.get_device_module("cuda:1") is sf.cuda and sf.get_device_module(sf.device("cpu")) is sf.cpu
    for lib in (sf, torch):
        with pytest.raises(RuntimeError, match="Invalid value of device '3', expect torch.device, str, or None"):
            lib.get_device_module(3)
        with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
            lib.get_device_module("foo")
        with pytest.raises(RuntimeError, match="Device 'meta' does not have a corresponding module"):
            lib.get_device_module("meta")


SYM_CASES = [
    ("sym_int", (2.7,)), ("sym_int", (-2.7,)), ("sym_int", (True,)), ("sym_int", ("T2.7",)),
    ("sym_float", (3,)), ("sym_float", ("T3",)), ("sym_max", (2, 3.5)), ("sym_max", (2, 3)),
    ("sym_max", (3.0, 2)), ("sym_max", (np.int64(4), 1)), ("sym_min", (2.0, 1)), ("sym_min", (2, 5)),
    ("sym_not", (0,)), ("sym_not", ("Tb",)), ("sym_ite", (True, 1, 2)), ("sym_ite", (False, "a", "b")),
    ("sym_sqrt", (4,)), ("sym_sqrt", ("T2.7",)), ("sym_sum", ([1, 2, 3],)), ("sym_sum", (1.5, 2)),
    ("sym_sum", ([],)), ("sym_sum", (("T2.7", 1),)),
]


def _arg(lib, a):
    if isinstance(a, str) and a.startswith("T"):
        return lib.tensor(True) if a == "Tb" else lib.tensor(float(a[1:]))
    if isinstance(a, tuple):
        return tuple(_arg(lib, v) for v in a)
    return a


@pytest.mark.parametrize("name, args", SYM_CASES)
def test_sym_helpers_match_torch(name, args):
    got = getattr(sf, name)(*(_arg(sf, a) for a in args))
    want = getattr(torch, name)(*(_arg(torch, a) for a in args))
    if isinstance(want, torch.Tensor):
        assert isinstance(got, sf.Tensor)
        want, got = want.item(), got.item()
    assert type(got) is type(want) and got == pytest.approx(want)


@pytest.mark.parametrize("name, args, message", [
    ("sym_max", ("T1", 2), "expected .* got"), ("sym_min", (1, "x"), "expected .* got"),
    ("sym_ite", (1, 1, 2), "expected SymBool or bool, got <class 'int'>"),
    ("sym_ite", (True, 1.5, 2), "type mismatch: <class 'float'> vs <class 'int'>"),
])
def test_sym_errors_match_torch(name, args, message):
    for lib in (sf, torch):
        with pytest.raises(AssertionError, match=message):
            getattr(lib, name)(*(_arg(lib, a) for a in args))
    with pytest.raises(ValueError, match="math domain error"):
        sf.sym_sqrt(-1.0)
