"""Complex dtypes beyond the spec table (tests/ops/specs/complex.py): names, promotion and
printing against torch, complex leaves that require grad (PyTorch's conjugate-Wirtinger
gradients), views, casts, errors; and the products torch refuses for mixed dtypes."""

import itertools
import warnings

import numpy as np
import pytest
import torch

import shardflow

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex64", "complex128"]


def _name(d):
    return str(d).split(".")[-1]


def test_dtype_names_and_properties():
    assert shardflow.cfloat is shardflow.complex64 and shardflow.cdouble is shardflow.complex128
    for name in ("complex64", "complex128"):
        s, t = getattr(shardflow, name), getattr(torch, name)
        assert s.is_complex and not s.is_floating_point and s.itemsize == t.itemsize
        assert _name(s.to_real()) == _name(t.to_real())
    assert shardflow.float64.to_complex() is shardflow.complex128
    assert shardflow.float32.to_complex() is shardflow.complex64


def test_promotion_matches_torch():
    """Every pair, as tensors, zero-dim tensors and with Python scalars. torch's complex32
    (float16 with a complex operand) has no NumPy dtype: shardflow gives complex64 there."""
    def expected(t):
        return "complex64" if t == "complex32" else t

    for a, b in itertools.product(NAMES, NAMES):
        ta, tb = getattr(torch, a), getattr(torch, b)
        assert shardflow.promote_types(a, b).name == expected(_name(torch.promote_types(ta, tb))), (a, b)
        got = shardflow.ones(2, dtype=getattr(shardflow, a)) * shardflow.tensor(1, dtype=getattr(shardflow, b))
        want = torch.ones(2, dtype=ta) * torch.tensor(1, dtype=tb)
        assert got.dtype.name == expected(_name(want.dtype)), (a, b, "zero-dim")
    for a in NAMES:
        for s in (True, 2, 2.5, 1j):
            got = shardflow.ones(2, dtype=getattr(shardflow, a)) + s if a != "bool" or s is not True else None
            if got is None:
                continue
            want = torch.ones(2, dtype=getattr(torch, a)) + s
            assert got.dtype.name == expected(_name(want.dtype)), (a, s)


def test_python_complex_data_and_default_dtype():
    assert shardflow.tensor([1 + 2j, 3]).dtype is shardflow.complex64
    assert shardflow.tensor(np.array([1j])).dtype is shardflow.complex128  # NumPy's dtype kept
    shardflow.set_default_dtype(shardflow.float64)
    try:
        assert shardflow.tensor([1j]).dtype is shardflow.complex128
        assert (shardflow.ones(2, dtype=shardflow.float32) * 1j).dtype is shardflow.complex64
    finally:
        shardflow.set_default_dtype(shardflow.float32)
    z = shardflow.tensor([1 + 2j])
    assert z.is_complex() and shardflow.is_complex(z) and not z.is_floating_point()
    assert z.item() == 1 + 2j and z.tolist() == [1 + 2j]


def test_printing_matches_torch():
    rng = np.random.default_rng(0)
    values = [np.array([1 + 2j, -3.5 + 0.25j]), np.array(1 - 1j), np.array([[0j, -0.0 - 0j, 1e10 + 1j]]),
              rng.standard_normal((3, 4)) + 1e-6j * rng.standard_normal((3, 4)),
              rng.standard_normal(2000) + 1j * rng.standard_normal(2000),
              np.array([np.nan + 1j, np.inf - np.inf * 1j])]
    for v in values:
        for dt in (np.complex64, np.complex128):
            got = repr(shardflow.tensor(v.astype(dt))).replace("shardflow.", "torch.")
            assert got == repr(torch.tensor(v.astype(dt)))
    z = shardflow.tensor([1 + 1j], requires_grad=True)
    assert repr(z) == "tensor([1.+1.j], requires_grad=True)"


def _leaf_grads(fn, z0):
    out = []
    for lib in (shardflow, torch):
        z = lib.tensor(z0, requires_grad=True)
        fn(lib, z).backward()
        out.append(z.grad.numpy())
    return out


@pytest.mark.parametrize("fn", [
    lambda m, z: (z.abs() ** 2).sum(),
    lambda m, z: (z * z).real.sum() + (z * (2 - 1j)).imag.sum(),
    lambda m, z: m.angle(z).sum(),
    lambda m, z: m.view_as_real(z.conj() / (z + 3)).sum(),
    lambda m, z: (z ** 3).abs().sum(),
    lambda m, z: m.view_as_real(m.outer(z, z)).sum(),
    # multi-output nodes: every complex output carries a gradient
    lambda m, z: (m.split(z, 3)[1] * (1 + 2j)).imag.sum() + m.split(z, 3)[0].abs().sum(),
    lambda m, z: m.unbind(z)[2].real + (m.chunk(z, 2)[1] ** 2).imag.sum(),
], ids=["abs2", "real_imag", "angle", "conj_div", "pow_abs", "outer", "split", "unbind_chunk"])
def test_complex_leaf_gradients_match_torch(fn):
    rng = np.random.default_rng(1)
    z0 = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    got, want = _leaf_grads(fn, z0)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_views_share_memory_and_version():
    x = shardflow.tensor(np.arange(8, dtype=np.float32).reshape(2, 2, 2))
    z = shardflow.view_as_complex(x)
    assert z.shape == (2, 2) and z.dtype is shardflow.complex64
    with shardflow.no_grad():
        x[0, 0, 1] = 10.0
    assert z[0, 0].item() == 10j
    r = shardflow.view_as_real(z)
    assert np.shares_memory(r.numpy(), x.numpy()) and r._version_counter is x._version_counter
    assert shardflow.real(x) is x


def test_casts():
    x = shardflow.tensor([1.0, 2.0], requires_grad=True)
    z = x.to(shardflow.complex64)
    assert z.dtype is shardflow.complex64
    shardflow.view_as_real(z * (1 + 2j)).sum().backward()
    xt = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.view_as_real(xt.to(torch.complex64) * (1 + 2j)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        back = shardflow.tensor([1 + 5j]).float()
    assert back.dtype is shardflow.float32 and back.item() == 1.0
    assert shardflow.ones(2).cdouble().dtype is shardflow.complex128


def test_errors_match_torch():
    def message(lib, f):
        with pytest.raises(RuntimeError) as info:
            f(lib)
        return str(info.value)

    assert "last dimension of size 2" in message(shardflow, lambda m: m.view_as_complex(m.ones(3, 3)))
    assert "float and double" in message(shardflow, lambda m: m.view_as_complex(m.ones(3, 2).bfloat16()))
    assert "stride 1" in message(shardflow, lambda m: m.view_as_complex(m.ones(2, 3).T))
    assert "complex" in message(shardflow, lambda m: m.view_as_real(m.ones(2)))
    assert message(shardflow, lambda m: m.imag(m.ones(2))) == message(torch, lambda m: m.imag(m.ones(2)))
    assert "same dtype" in message(shardflow, lambda m: m.polar(m.ones(2), m.ones(2, dtype=m.float64)))
    for lib in (shardflow, torch):
        message(lib, lambda m: m.view_as_complex(m.ones(3, 2).bfloat16()))
        message(lib, lambda m: m.polar(m.ones(2), m.ones(2, dtype=m.float64)))


@pytest.mark.parametrize("op", [
    lambda m, a, b: m.mm(a, b.reshape(3, 1)), lambda m, a, b: m.mv(a, b),
    lambda m, a, b: m.dot(a[0], b), lambda m, a, b: m.matmul(a, b),
    lambda m, a, b: m.bmm(a[None], b.reshape(1, 3, 1)), lambda m, a, b: m.einsum("ij,j->i", a, b),
    lambda m, a, b: m.tensordot(a, b, dims=1), lambda m, a, b: m.cross(a, b[None].expand(2, 3), dim=1),
    lambda m, a, b: m.addmv(m.zeros(2), a, b),
], ids=["mm", "mv", "dot", "matmul", "bmm", "einsum", "tensordot", "cross", "addmv"])
def test_products_torch_refuses_for_mixed_dtypes_raise(op):
    for lib in (shardflow, torch):
        a = lib.ones(2, 3)
        b = lib.ones(3, dtype=lib.float64)
        with pytest.raises(RuntimeError):
            op(lib, a, b)


def test_no_complex_warning_from_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        z = shardflow.tensor([1 + 1j, 2 - 1j], requires_grad=True)
        x = shardflow.ones(2, requires_grad=True)
        shardflow.view_as_real(z * x + x.abs()).sum().backward()
    zt = torch.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    xt = torch.ones(2, requires_grad=True)
    torch.view_as_real(zt * xt + xt.abs()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(z.grad.numpy(), zt.grad.numpy(), rtol=1e-6)
