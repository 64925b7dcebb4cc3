"""``shardflow.special`` against ``torch.special`` (torch 2.13): every name exists; values on
float32 and float64 across each domain's edges (negative, zero, large, inf, NaN); PyTorch's
dtype rules and broadcasting; gradients against torch and against float64 central
differences where torch has a derivative, second derivatives through ``create_graph``, and
PyTorch's error where it has none; ``out=``."""

import warnings

import numpy as np
import pytest
import torch

import shardflow

SF, TS = shardflow.special, torch.special

# inputs per function (float32-exact numbers, so the float32 and float64 runs see the same x)
_GENERAL = [-np.inf, -30.0, -2.5, -0.5, -0.0, 0.0, 0.5, 3.0, 9.0, 30.0, np.inf, np.nan]
_PROBABILITY = [-0.5, 0.0, 0.125, 0.5, 0.875, 1.0, 1.5, np.nan]
_UNARY_NEW = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "entr", "erfcx",
              "i0e", "i1e", "log_ndtr", "modified_bessel_i0", "modified_bessel_i1",
              "modified_bessel_k0", "modified_bessel_k1", "ndtr", "ndtri",
              "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0"]
_UNARY_REEXPORTED = ["exp2", "logit", "round", "sinc", "expit", "erf", "erfc", "i0", "i1",
                     "gammaln", "digamma", "log1p", "expm1"]
_POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
                "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
                "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                "laguerre_polynomial_l", "legendre_polynomial_p"]
_NO_DERIVATIVE = [n for n in _UNARY_NEW if "bessel" in n or n == "airy_ai"] + _POLYNOMIALS


def _inputs(name):
    return _PROBABILITY if name == "ndtri" else _GENERAL


def _pair(values, dtype):
    return (shardflow.tensor(np.array(values, dtype=dtype)),
            torch.tensor(np.array(values, dtype=dtype)))


def test_every_torch_special_function_is_there():
    public = [n for n in dir(TS) if not n.startswith("_") and callable(getattr(TS, n))
              and n not in ("Tensor",)]
    assert [n for n in public if not hasattr(SF, n)] == []
    assert sorted(SF.__all__) == sorted(public)


@pytest.mark.parametrize("name", _UNARY_NEW + _UNARY_REEXPORTED)
def test_unary_values_and_dtypes_match_torch(name):
    """float64 to 1e-12 relative; float32 to float32 rounding of the exact (float64) value
    (torch's float32 kernels are less accurate than that in places: ndtr(-3.5) is 3e-5 off)."""
    for dtype in (np.float64, np.float32):
        x, tx = _pair(_inputs(name), dtype)
        got = getattr(SF, name)(x)
        want = getattr(TS, name)(tx.double()).numpy()
        assert str(got.dtype).split(".")[1] == np.dtype(dtype).name, name
        rtol = 1e-12 if dtype == np.float64 else 2e-6
        if name == "airy_ai":  # ATen's Ai(-2.5) is 2e-6 off; SciPy's agrees with mpmath to 1e-15
            rtol = max(rtol, 5e-6)
        if name.startswith("bessel_"):  # ATen's J/Y are 1e-8 off at x = 3, 9; SciPy's are not
            rtol = max(rtol, 2e-8)
        # absolute: ATen's ndtr(-30) underflows to 0 (SciPy: 4.9e-198); float32 sinc(30) is
        # sin(float32(30 pi)) / ..., 2.5e-9 rather than ATen's 1e-16
        atol = 1e-30 if dtype == np.float64 else 1e-8
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.astype(dtype),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{name} {dtype}")
    if name == "round":  # torch 2.13 refuses integer input ("round_vml_cpu" not implemented)
        return
    integer = getattr(SF, name)(shardflow.tensor([0, 1, 2]))  # integers: float32
    t_integer = getattr(TS, name)(torch.tensor([0, 1, 2]))
    assert str(integer.dtype)[10:] == str(t_integer.dtype)[6:], name
    np.testing.assert_allclose(integer.numpy(), t_integer.numpy(), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", _POLYNOMIALS)
def test_polynomial_values_match_torch(name):
    """A grid of x (ends of the interval, outside it, inf) and n (negative, small, the
    trigonometric range, Hermite past its limit, float n truncated, NaN n), broadcast (5, 1)
    against (8,); the scalar-n and scalar-x forms; promoted dtypes. NaN x only for n < 2:
    ATen returns an uninitialised value there."""
    xs = [-np.inf, -3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5, np.inf]
    ns = [-2.0, 0.0, 1.0, 2.7, 5.0, 9.0, 30.0, 600.0, np.nan]
    for dtype, tol in ((np.float64, 1e-9), (np.float32, 1e-4)):
        x, tx = _pair(np.array(xs)[:, None], dtype)
        n, tn = _pair(ns, dtype)
        got = getattr(SF, name)(x, n)
        want = getattr(TS, name)(tx, tn)
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype).endswith(str(want.dtype)[6:])
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=f"{name} {dtype}")
    nan_x, t_nan_x = _pair([np.nan], np.float64)
    for k in (-1, 0, 1):
        np.testing.assert_equal(getattr(SF, name)(nan_x, k).numpy(),
                                getattr(TS, name)(t_nan_x, k).numpy())
    x, tx = _pair([0.25, -0.5], np.float32)
    np.testing.assert_allclose(getattr(SF, name)(x, 3).numpy(), getattr(TS, name)(tx, 3).numpy(),
                               rtol=1e-6)
    n_int = shardflow.tensor([0, 2, 3])
    got = getattr(SF, name)(0.5, n_int)  # scalar x, integer n: the default float dtype
    want = getattr(TS, name)(0.5, torch.tensor([0, 2, 3]))
    assert str(got.dtype) == "shardflow.float32" and want.dtype is torch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    got = getattr(SF, name)(shardflow.tensor([0.5], dtype=shardflow.float32),
                            shardflow.tensor([3.0], dtype=shardflow.float64))
    assert got.dtype is shardflow.float64  # promoted, as torch


def test_binary_values_match_torch():
    """xlog1py and zeta: edge grids broadcast (n, 1) against (m,), Python-number forms,
    integer promotion."""
    a = [0.0, 1.0, -2.0, 2.5, np.inf, np.nan]
    b = [-2.0, -1.0, -0.5, 0.0, 3.0, 1e10, np.inf, np.nan]
    xs = [-np.inf, -2.0, 0.5, 1.0, 1.5, 2.0, 3.0, 10.0, np.inf, np.nan]
    qs = [-np.inf, -3.0, -2.5, -1.0, 0.0, 0.5, 1.0, 2.0, 10.0, 1e10, np.inf, np.nan]
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        for name, left, right in (("xlog1py", a, b), ("zeta", xs, qs)):
            x, tx = _pair(np.array(left)[:, None], dtype)
            y, ty = _pair(right, dtype)
            got, want = getattr(SF, name)(x, y), getattr(TS, name)(tx, ty)
            assert got.dtype is getattr(shardflow, str(want.dtype)[6:])
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, equal_nan=True,
                                       err_msg=f"{name} {dtype}")
    for name in ("xlog1py", "zeta"):
        v, tv = _pair([1.5, 2.0, 4.0], np.float32)
        for got, want in ((getattr(SF, name)(v, 2), getattr(TS, name)(tv, 2)),
                          (getattr(SF, name)(3.0, v), getattr(TS, name)(3.0, tv)),
                          (getattr(SF, name)(shardflow.tensor([2, 3]), shardflow.tensor([1, 2])),
                           getattr(TS, name)(torch.tensor([2, 3]), torch.tensor([1, 2])))):
            assert str(got.dtype) == "shardflow.float32" and want.dtype is torch.float32
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# name -> (shardflow call, torch call, float64 points inside the domain)
_DIFFERENTIABLE = {
    "entr": ([0.25, 1.0, 3.0],),
    "erfcx": ([-1.5, 0.0, 0.5, 4.0],),
    "i0e": ([-3.0, -0.5, 0.5, 12.0],),
    "i1e": ([-3.0, -0.5, 0.0, 0.5, 12.0],),
    "ndtr": ([-3.0, 0.0, 1.5],),
    "log_ndtr": ([-8.0, -1.0, 0.0, 2.0],),
    "ndtri": ([0.05, 0.5, 0.9],),
    "logit": ([0.2, 0.5, 0.7],),
    "exp2": ([-1.0, 0.5, 3.0],),
    "sinc": ([-1.3, 0.5, 2.2],),
    "round": ([-1.3, 0.4, 2.6],),
    "i0": ([-2.0, 0.0, 0.5, 3.0],),
    "i1": ([-2.0, 0.0, 0.5, 3.0],),
}


def _central_difference(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("name", sorted(_DIFFERENTIABLE) + ["xlog1py", "zeta", "softmax",
                                                           "log_softmax"])
def test_gradients_match_torch_and_finite_differences(name):
    """First derivatives against torch (float64) and central differences; second
    derivatives (create_graph) against torch (i0/i1 had none before)."""
    w = np.array([0.3, -1.1, 0.7, 2.0, -0.4, 1.3])
    if name in ("xlog1py", "zeta"):
        a = [0.5, 0.0, -1.5, 2.0] if name == "xlog1py" else [2.0, 3.5, 1.5, 4.0]
        b = [0.5, -0.25, 3.0, 0.0] if name == "xlog1py" else [0.5, 1.0, 2.5, 7.0]
        inputs = (np.array(a), np.array(b))
        wrt = (0, 1) if name == "xlog1py" else (1,)
    elif name in ("softmax", "log_softmax"):
        inputs, wrt = (np.array([[0.3, -1.0, 2.0], [0.0, 0.5, 0.5]]),), (0,)
    else:
        inputs, wrt = (np.array(_DIFFERENTIABLE[name][0]),), (0,)

    def call(mod, arrays, grad):
        ts = [mod.tensor(v, dtype=mod.float64, requires_grad=grad and i in wrt)
              for i, v in enumerate(arrays)]
        extra = (1,) if name in ("softmax", "log_softmax") else ()
        return ts, getattr(mod.special, name)(*ts, *extra)

    ts, y = call(shardflow, inputs, True)
    tts, ty = call(torch, inputs, True)
    weight = w[: y.numel()].reshape(tuple(y.shape))
    loss = (y * shardflow.tensor(weight)).sum()
    tloss = (ty * torch.tensor(weight)).sum()
    grads = shardflow.autograd.grad(loss, [ts[i] for i in wrt], create_graph=True)
    tgrads = torch.autograd.grad(tloss, [tts[i] for i in wrt], create_graph=True)
    for i, g, tg in zip(wrt, grads, tgrads):
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=f"{name} d/d input {i}")
        if name != "round":  # piecewise constant: torch's zero, no difference quotient
            def f(v, i=i):
                args = list(inputs)
                args[i] = v
                return (call(shardflow, args, False)[1].numpy() * weight).sum()
            fd = [_central_difference(lambda s, k=k: f(inputs[i] + s * np.eye(inputs[i].size)[k]
                                                        .reshape(inputs[i].shape)), 0.0)
                  for k in range(inputs[i].size)]
            np.testing.assert_allclose(g.detach().numpy().ravel(), fd, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name} finite differences, input {i}")
        # second derivative: sum of the gradient, differentiated again (shardflow's sinc has
        # no backward_graph yet: ops/math_extra.py)
        if name in ("round", "sinc"):
            continue
        h = shardflow.autograd.grad(g.sum(), ts[i], allow_unused=True)[0]
        th = torch.autograd.grad(tg.sum(), tts[i], allow_unused=True)[0]
        h = np.zeros(inputs[i].shape) if h is None else h.numpy()
        th = np.zeros(inputs[i].shape) if th is None else th.numpy()
        np.testing.assert_allclose(h, th, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name} second derivative, input {i}")


@pytest.mark.parametrize("name", _NO_DERIVATIVE)
def test_no_derivative_gives_no_graph_like_torch(name):
    """Where torch has no derivative (the Bessel functions, the polynomials), its result does
    not require grad, so a loss that adds it gets gradient only from its other terms: the
    same here, compared with torch's gradient of the same loss."""
    xs = [1.5, 2.5]
    x = shardflow.tensor(xs, dtype=shardflow.float64, requires_grad=True)
    tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    if name in _POLYNOMIALS:
        y, ty = getattr(SF, name)(x, 3), getattr(torch.special, name)(tx, 3)
    else:
        y, ty = getattr(SF, name)(x), getattr(torch.special, name)(tx)
    assert y.requires_grad is ty.requires_grad is False
    assert y.grad_fn is None
    (y * 2 + x * x).sum().backward()
    (ty * 2 + tx * tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_zeta_first_argument_raises_pytorch_error():
    """zeta is differentiable in q only; torch raises naming it for x: the same here."""
    x = shardflow.tensor([1.5, 2.5], dtype=shardflow.float64, requires_grad=True)
    y = SF.zeta(x, shardflow.tensor([1.0, 2.0], dtype=shardflow.float64))
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        (y * 2 + x).sum().backward()


def test_out_argument_like_torch():
    """out= writes into (and returns) the given tensor, resizing it with PyTorch's warning;
    PyTorch's errors for a graph and for an integer out."""
    for name, args in (("i0e", ([0.5, 2.0],)), ("erf", ([0.5, 2.0],)),
                       ("xlog1py", ([0.5, 2.0], [1.0, 3.0])), ("zeta", ([2.0, 3.0], [1.0, 2.0])),
                       ("chebyshev_polynomial_t", ([0.5, 2.0], [3.0, 4.0])),
                       ("logsumexp", ([0.5, 2.0], 0))):
        sargs = [shardflow.tensor(a) if isinstance(a, list) else a for a in args]
        targs = [torch.tensor(a) if isinstance(a, list) else a for a in args]
        want = getattr(TS, name)(*targs)
        out = shardflow.empty(tuple(want.shape))
        assert getattr(SF, name)(*sargs, out=out) is out
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, err_msg=name)
    out = shardflow.empty(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SF.ndtr(shardflow.tensor([0.0, 1.0]), out=out)
    assert tuple(out.shape) == (2,) and "was resized" in str(caught[0].message)
    double = shardflow.empty(2, dtype=shardflow.float64)
    SF.ndtr(shardflow.tensor([0.0, 1.0]), out=double)
    np.testing.assert_allclose(double.numpy(), [0.5, 0.8413447460685429], rtol=1e-7)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        SF.ndtr(shardflow.tensor([0.0], requires_grad=True), out=shardflow.empty(1))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        SF.ndtr(shardflow.tensor([0.0]), out=shardflow.empty(1, dtype=shardflow.int64))


def test_no_shardflow_module_imports_scipy_at_import_time():
    """SciPy comes through ``backend/scipy_lib.py`` on first use: no shardflow module binds a
    SciPy module at module level (an ``import scipy...`` at the top of a file would)."""
    import sys
    import types

    bound = sorted(f"{name}.{attr}" for name, mod in list(sys.modules.items())
                   if name.startswith("shardflow") and mod is not None
                   for attr, v in vars(mod).items()
                   if isinstance(v, types.ModuleType) and v.__name__.split(".")[0] == "scipy")
    assert bound == []


def test_cuda_tensors_give_the_cpu_values():
    """On ``device="cuda"`` (CuPy's host stand-in, tests/doubles/host_cuda.py): SciPy-backed
    functions round-trip through the host, the polynomials run on the array module; results
    stay on the device and equal the CPU's, gradients included."""
    from ..doubles import host_cuda

    x_np = np.array([-1.5, 0.0, 0.5, 2.0])
    cpu = {}
    for dev in ("cpu", "cuda"):
        with host_cuda.installed():
            x = shardflow.tensor(x_np, device=dev, requires_grad=True)
            q = shardflow.tensor([1.0, 2.0, 0.5, 3.0], device=dev)
            outs = [SF.ndtr(x), SF.bessel_j0(x.detach()), SF.zeta(x.detach() + 3.0, q),
                    SF.xlog1py(x, q), SF.chebyshev_polynomial_t(x.detach(), 5), SF.i1(x)]
            assert all(o.device.type == dev for o in outs)
            (grad,) = shardflow.autograd.grad(sum(o.sum() for o in outs if o.requires_grad), x)
            cpu.setdefault("outs", [o.detach().cpu().numpy() for o in outs])
            cpu.setdefault("grad", grad.cpu().numpy())
            for o, want in zip(outs, cpu["outs"]):
                np.testing.assert_allclose(o.detach().cpu().numpy(), want, rtol=1e-12)
            np.testing.assert_allclose(grad.cpu().numpy(), cpu["grad"], rtol=1e-12)


@pytest.mark.parametrize("name", ["ndtr", "bessel_j0", "i0", "i1", "zeta", "xlog1py",
                                  "legendre_polynomial_p"])
def test_meta_tensors_give_torch_shape_and_dtype(name):
    args = [(3, 1), (4,)] if name in ("zeta", "xlog1py", "legendre_polynomial_p") else [(3, 1)]
    got = getattr(SF, name)(*[shardflow.empty(*s, device="meta") for s in args])
    want = getattr(TS, name)(*[torch.ones(*s) for s in args])  # (torch's meta kernels: 3 s to load)
    assert got.device.type == "meta" and tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype)[10:] == str(want.dtype)[6:]
