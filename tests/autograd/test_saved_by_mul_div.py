"""What ``mul``/``div`` (and add/sub/neg) keep for backward, against torch 2.13: an operand
whose own gradient is not needed is not saved (``h * 0.5``, ``logits / T``, ``h * mask``
keep no ``h``), so a chain of them holds no inputs alive; gradients unchanged (torch and
float64 finite differences)."""

import gc
import weakref

import numpy as np
import pytest
import torch

import shardflow as sf


def _operands(lib, seed=0):
    rng = np.random.default_rng(seed)
    v = {k: rng.standard_normal(s) + 2.0 for k, s in
         (("x", (3, 4)), ("w", (3, 4)), ("c", (3, 4)), ("r", (3, 1)), ("q", (4,)))}
    t = {k: lib.tensor(a, dtype=lib.float32) for k, a in v.items()}
    for k in ("x", "w", "r"):
        t[k].requires_grad_()
    t["z0"] = lib.tensor(2.5)
    t["z0g"] = lib.tensor(2.5, requires_grad=True)
    t["xc"] = lib.tensor(v["x"][0] + 1j * v["w"][0], dtype=lib.complex64, requires_grad=True)
    return t


CASES = {
    "x*2.5": lambda t: t["x"] * 2.5,
    "2.5*x": lambda t: 2.5 * t["x"],
    "x*3": lambda t: t["x"] * 3,
    "x/2.5": lambda t: t["x"] / 2.5,
    "2.5/x": lambda t: 2.5 / t["x"],
    "mul(x,2)": lambda t: sf_or_torch(t).mul(t["x"], 2),
    "x.mul_(2)": lambda t: (t["x"] * 1).mul_(2),
    "x.div_(c)": lambda t: (t["x"] * 1).div_(t["c"]),
    "x*c": lambda t: t["x"] * t["c"],
    "c*x": lambda t: t["c"] * t["x"],
    "x*z0": lambda t: t["x"] * t["z0"],
    "z0*x": lambda t: t["z0"] * t["x"],
    "x*z0g": lambda t: t["x"] * t["z0g"],
    "x*w": lambda t: t["x"] * t["w"],
    "x/c": lambda t: t["x"] / t["c"],
    "c/x": lambda t: t["c"] / t["x"],
    "x/z0": lambda t: t["x"] / t["z0"],
    "x/w": lambda t: t["x"] / t["w"],
    "r*q": lambda t: t["r"] * t["q"],  # broadcast, only input 0 needs a gradient
    "q*r": lambda t: t["q"] * t["r"],  # broadcast, only input 1 needs a gradient
    "r/q": lambda t: t["r"] / t["q"],
    "x*c.double()": lambda t: t["x"] * t["c"].double(),
    "x.half()*2.5": lambda t: t["x"].half() * 2.5,
    "xc*2": lambda t: t["xc"] * 2,
    "xc*(1+2j)": lambda t: t["xc"] * (1 + 2j),
    "xc/(1+2j)": lambda t: t["xc"] / (1 + 2j),
    "x+2": lambda t: t["x"] + 2,
    "add(x,w,alpha=2)": lambda t: sf_or_torch(t).add(t["x"], t["w"], alpha=2),
    "sub(x,c,alpha=2)": lambda t: sf_or_torch(t).sub(t["x"], t["c"], alpha=2),
    "2-x": lambda t: 2 - t["x"],
    "-x": lambda t: -t["x"],
}


def sf_or_torch(t):
    return torch if isinstance(t["x"], torch.Tensor) else sf


def _packed(lib, f):
    t = _operands(lib)
    got = []

    def pack(v):
        got.append((tuple(v.shape), np.asarray(v.detach().cpu().numpy() if lib is torch else v.detach().numpy())))
        return v

    with lib.autograd.graph.saved_tensors_hooks(pack, lambda v: v):
        out = f(t)
    return got, out, t


@pytest.mark.parametrize("case", list(CASES))
def test_saves_what_torch_saves_and_gradients_match(case):
    f = CASES[case]
    packed_t, out_t, tt = _packed(torch, f)
    packed_s, out_s, ts = _packed(sf, f)
    assert [s for s, _ in packed_s] == [s for s, _ in packed_t], case
    for (_, a), (_, b) in zip(packed_s, packed_t):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(out_s.detach().numpy(), out_t.detach().numpy(), rtol=1e-3 if "half" in case else 1e-6)
    out_t.abs().sum().backward() if out_t.is_complex() else out_t.float().sum().backward()
    out_s.abs().sum().backward() if out_s.is_complex() else out_s.float().sum().backward()
    for k in tt:
        if tt[k].grad is not None or ts[k].grad is not None:
            np.testing.assert_allclose(ts[k].grad.numpy(), tt[k].grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["x*c", "c*x", "r*q", "q*r", "r/q", "x/c", "x/2.5", "2.5/x", "x*z0"])
def test_partial_nodes_match_finite_differences(case):
    f = CASES[case]
    t = _operands(sf, 1)
    for k, v in t.items():
        if v.dtype == sf.float32:
            t[k] = v.detach().double().requires_grad_(v.requires_grad)
    wanted = [k for k, v in t.items() if v.requires_grad and v.dtype == sf.float64]

    def g(*xs):
        return f({**t, **dict(zip(wanted, xs))})

    assert sf.autograd.gradcheck(g, tuple(t[k] for k in wanted))


def test_chained_mul_by_a_number_keeps_no_input_alive():
    """Thirty ``h * 0.5`` (``loss * scale``, ``x / T``) held thirty inputs until backward."""
    x = sf.ones(8, requires_grad=True)
    c = sf.full((8,), 2.0)
    refs = []
    y = x * 1.0
    for k in range(30):
        refs.append(weakref.ref(y.array))
        y = y * 0.5 if k % 3 == 0 else y / 3.0 if k % 3 == 1 else y * c
    gc.collect()
    assert sum(r() is not None for r in refs) == 0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(8, 0.5 ** 10 / 3.0 ** 10 * 2.0 ** 10), rtol=1e-5)


@pytest.mark.parametrize("lib", [torch, sf])
def test_in_place_change_of_an_unsaved_operand_is_allowed_like_torch(lib):
    x = lib.ones(3, requires_grad=True)
    ops = ((lambda h, c: h * c, True), (lambda h, c: c * h, True), (lambda h, c: h / c, True),
           (lambda h, c: h * 2.0, False))
    for op, c_saved in ops:
        h, c = x * 1.0, lib.full((3,), 2.0)
        y = op(h, c)
        with lib.no_grad():
            h.add_(1)  # h is not saved: backward still runs
        y.sum().backward()
        h, c = x * 1.0, lib.full((3,), 2.0)
        y = op(h, c)
        if c_saved:
            c.add_(1)
            with pytest.raises(RuntimeError, match="needed for gradient computation has been modified"):
                y.sum().backward()


@pytest.mark.parametrize("lib", [torch, sf])
def test_saved_self_of_mul_by_a_number_is_none_like_torch(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2.0
    assert y.grad_fn.name() == "MulBackward0" and y.grad_fn._saved_self is None
    assert float(y.grad_fn._saved_other) == 2.0
    z = x / lib.full((3,), 2.0)
    assert z.grad_fn.name() == "DivBackward0" and z.grad_fn._saved_self is None
    assert z.grad_fn._saved_other.shape == (3,)


def test_second_derivative_through_partial_nodes_like_torch():
    def f(lib):
        t = _operands(lib, 2)
        x, c, q = t["x"], t["c"], t["q"]
        y = ((x * c) * x / 2.5 + (c * x) * (x / c) + (2.5 / x) * (q * x)).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        gg, = lib.autograd.grad((g * g).sum(), x)
        return g.detach().numpy(), gg.numpy()

    for a, b in zip(f(sf), f(torch)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
