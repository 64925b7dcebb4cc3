"""``torch.fft`` beyond the op spec table (tests/ops/specs/fft.py): the three norms against
torch and against each other, result dtypes, gradients reaching a complex leaf, refusals,
and the namespace."""

import numpy as np
import pytest
import torch

import shardflow as sf

NORMS = ("backward", "forward", "ortho")


@pytest.mark.parametrize("norm", NORMS)
def test_norms_match_torch_and_invert(norm):
    x = np.random.default_rng(0).standard_normal((3, 8))
    got = sf.fft.fft(sf.tensor(x), norm=norm)
    want = torch.fft.fft(torch.tensor(x), norm=norm)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    np.testing.assert_allclose(sf.fft.ifft(got, norm=norm).real.numpy(), x, atol=1e-12)
    np.testing.assert_allclose(sf.fft.irfft(sf.fft.rfft(sf.tensor(x), norm=norm), n=8, norm=norm).numpy(), x,
                               atol=1e-12)


def test_norm_scales_relate_as_documented():
    """forward = backward / n, ortho = backward / sqrt(n); ortho keeps the energy (Parseval)."""
    x = sf.tensor(np.random.default_rng(1).standard_normal((2, 3, 4)))
    b, f, o = (sf.fft.fftn(x, norm=n) for n in NORMS)
    n = 24
    np.testing.assert_allclose(f.numpy(), b.numpy() / n, atol=1e-12)
    np.testing.assert_allclose(o.numpy(), b.numpy() / np.sqrt(n), atol=1e-12)
    np.testing.assert_allclose((o.abs() ** 2).sum().item(), (x ** 2).sum().item(), rtol=1e-12)


@pytest.mark.parametrize("dtype,want", [(sf.float32, sf.complex64), (sf.float64, sf.complex128),
                                        (sf.int64, sf.complex64)])
def test_result_dtypes_follow_torch(dtype, want):
    x = sf.arange(6).to(dtype)
    assert sf.fft.fft(x).dtype == want
    assert sf.fft.rfft(x).dtype == want
    assert sf.fft.irfft(sf.fft.rfft(x)).dtype == (sf.float64 if want == sf.complex128 else sf.float32)
    t = torch.arange(6).to(getattr(torch, str(dtype).split(".")[-1]))
    assert str(torch.fft.fft(t).dtype).split(".")[-1] == str(want).split(".")[-1]


def test_gradient_reaches_a_complex_leaf_like_torch():
    rng = np.random.default_rng(2)
    z = rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5))
    w = rng.standard_normal((2, 8))
    s_z = sf.tensor(z, requires_grad=True)
    t_z = torch.tensor(z, requires_grad=True)
    for lib, leaf in ((sf, s_z), (torch, t_z)):
        y = lib.fft.irfft(lib.fft.fft(leaf, norm="ortho"), n=8, norm="forward")
        (y * lib.tensor(w)).sum().backward()
    assert s_z.grad.dtype == sf.complex128
    np.testing.assert_allclose(s_z.grad.numpy(), t_z.grad.numpy(), atol=1e-12)


def test_frequencies_and_shifts_match_torch():
    for n, d in ((1, 1.0), (6, 0.1), (7, 2.0)):
        np.testing.assert_allclose(sf.fft.fftfreq(n, d).numpy(), torch.fft.fftfreq(n, d).numpy(), rtol=1e-6)
        np.testing.assert_allclose(sf.fft.rfftfreq(n, d).numpy(), torch.fft.rfftfreq(n, d).numpy(), rtol=1e-6)
    assert sf.fft.fftfreq(4).dtype == sf.float32
    x = sf.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(sf.fft.fftshift(x).numpy(), torch.fft.fftshift(torch.arange(12).reshape(3, 4)).numpy())
    np.testing.assert_array_equal(sf.fft.ifftshift(sf.fft.fftshift(x)).numpy(), x.numpy())


def test_refusals_name_the_fix():
    with pytest.raises(ValueError, match='Invalid normalization mode: "unit"'):
        sf.fft.fft(sf.randn(4), norm="unit")
    with pytest.raises(RuntimeError, match="expects a real input"):
        sf.fft.rfft(sf.fft.fft(sf.randn(4)))
    with pytest.raises(RuntimeError, match=r"\.float\(\)"):
        sf.fft.fft(sf.randn(4).to(sf.bfloat16))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        sf.fft.fft(sf.randn(4), n=0)
    with pytest.raises(RuntimeError, match="same length"):
        sf.fft.fftn(sf.randn(2, 3), s=(2, 3), dim=(0,))


def test_fft_namespace_reexports_the_ops():
    for name in sf.fft.__all__:
        assert getattr(sf.fft, name) is getattr(sf, "fft_" + name), name
        assert hasattr(torch.fft, name), name
