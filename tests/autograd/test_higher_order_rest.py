"""backward_graph of the remaining ops: interpolate, fold/unfold, nan_to_num, median/kthvalue,
diag_embed, the complex-number ops and the FFTs: the gradient of the gradient against torch
2.13 and float64 finite differences (tests/autograd/_double_backward)."""

import numpy as np
import pytest
import torch

import shardflow as sf
from tests.autograd._double_backward import check_double_backward

R = np.random.default_rng(5)
IMG = R.standard_normal((1, 2, 3, 3))
SEQ = R.standard_normal((1, 2, 3))
VOL = R.standard_normal((1, 1, 2, 2, 2))
COLS = R.standard_normal((1, 2 * 2 * 2, 4))  # (N, C * kh * kw, L) for a 3x3 fold with 2x2 blocks


def _F(m):
    return m.nn.functional


def _cube(t):
    return (t ** 3).sum()


ONE_INPUT_SPECS = {  # name: (f(m, x), x): the op followed by a cube, so the Hessian is nonzero
    "interpolate_nearest": (lambda m, x: _F(m).interpolate(x, size=(5, 4), mode="nearest"), IMG),
    "interpolate_nearest_exact": (lambda m, x: _F(m).interpolate(x, scale_factor=2, mode="nearest-exact"), IMG),
    "interpolate_linear": (lambda m, x: _F(m).interpolate(x, size=5, mode="linear"), SEQ),
    "interpolate_bilinear": (lambda m, x: _F(m).interpolate(x, size=(4, 5), mode="bilinear"), IMG),
    "interpolate_bilinear_ac": (lambda m, x: _F(m).interpolate(x, scale_factor=1.5, mode="bilinear",
                                                              align_corners=True), IMG),
    "interpolate_bicubic": (lambda m, x: _F(m).interpolate(x, size=(4, 2), mode="bicubic"), IMG),
    "interpolate_trilinear": (lambda m, x: _F(m).interpolate(x, size=(3, 3, 2), mode="trilinear"), VOL),
    "interpolate_area": (lambda m, x: _F(m).interpolate(x, size=(2, 2), mode="area"), IMG),
    "unfold": (lambda m, x: _F(m).unfold(x, kernel_size=2, padding=1, stride=2), IMG),
    "unfold_unbatched": (lambda m, x: _F(m).unfold(x[0], kernel_size=(2, 1), dilation=(1, 2)), IMG),
    "fold": (lambda m, x: _F(m).fold(x, output_size=(3, 3), kernel_size=2), COLS),
    "fold_unbatched": (lambda m, x: _F(m).fold(x[0], output_size=(3, 3), kernel_size=2), COLS),
}


@pytest.mark.parametrize("name", sorted(ONE_INPUT_SPECS))
def test_one_input_double_backward(name):
    op, x = ONE_INPUT_SPECS[name]
    check_double_backward(lambda m, t: _cube(op(m, t)), [x])


@pytest.mark.parametrize("name", ["interpolate_bicubic", "fold", "unfold"])
def test_third_order(name):
    op, x = ONE_INPUT_SPECS[name]
    v = R.standard_normal(x.shape)

    def third(m):
        t = m.tensor(x, requires_grad=True)
        y = (op(m, t) ** 4).sum()
        g, = m.autograd.grad(y, t, create_graph=True)
        h, = m.autograd.grad((g * m.tensor(v)).sum(), t, create_graph=True)
        t3, = m.autograd.grad((h * m.tensor(v)).sum(), t)
        return t3.detach().numpy()

    np.testing.assert_allclose(third(sf), third(torch), rtol=1e-6, atol=1e-8)


X = R.standard_normal((3, 4))
TIES = np.array([[1.0, 2.0, 2.0], [0.5, 2.0, 3.0]])  # the median 2.0 three times
NONFINITE = np.array([[1.0, np.nan, -0.5], [np.inf, 2.0, -np.inf]])


def _nan_to_num_masked(m, x):
    bad = m.tensor(NONFINITE) * 0.0  # NaN at the non-finite positions of NONFINITE, else 0
    return m.nan_to_num(x + bad, nan=0.5, posinf=2.0, neginf=-3.0)


SELECT_SPECS = {  # name: (f(m, x), x): the op followed by a cube
    "nan_to_num": (_nan_to_num_masked, X[:2, :3]),
    "median_all": (lambda m, x: m.median(x), X),
    "median_all_ties": (lambda m, x: m.median(x), TIES),
    "nanmedian_all": (lambda m, x: m.nanmedian(x), X),
    "median_dim": (lambda m, x: m.median(x, 1).values, X),
    "median_dim_keepdim": (lambda m, x: m.median(x, 0, keepdim=True)[0], X),
    "nanmedian_dim": (lambda m, x: m.nanmedian(x, 1)[0], X),
    "kthvalue": (lambda m, x: m.kthvalue(x, 2, 0).values, X),
    "mode": (lambda m, x: m.mode(x, 1)[0], X),
    "sort": (lambda m, x: m.sort(x, 1, descending=True)[0] * m.arange(4.0), X),
    "topk": (lambda m, x: m.topk(x, 2, 1)[0], X),
    "diag_embed": (lambda m, x: m.diag_embed(x), X),
    "diag_embed_offset_dims": (lambda m, x: m.diag_embed(x, offset=-1, dim1=0, dim2=2) * m.arange(5.0), X),
}


@pytest.mark.parametrize("name", sorted(SELECT_SPECS))
def test_select_double_backward(name):
    op, x = SELECT_SPECS[name]
    check_double_backward(lambda m, t: _cube(op(m, t)), [x], fd=name != "median_all_ties")


A = R.standard_normal((2, 4))
B = R.standard_normal((2, 4))


def _loss_c(m, z):
    """A real, non-quadratic loss of a complex (or real) tensor."""
    if not z.is_complex():
        return _cube(z)
    return (m.real(z * z * z) + m.imag(z * z) + z.abs() ** 3).sum()


def _z(m, a, b):
    return m.complex(a, b)


COMPLEX_SPECS = {  # name: f(m, a, b) -> a complex or real tensor, then _loss_c
    "complex": lambda m, a, b: _z(m, a, b),
    "complex_broadcast": lambda m, a, b: m.complex(a, b[:1]),
    "view_as_complex": lambda m, a, b: m.view_as_complex(m.stack([a, b], -1)),
    "view_as_real": lambda m, a, b: m.view_as_real(_z(m, a, b) * _z(m, b, a)),
    "real": lambda m, a, b: m.real(_z(m, a, b) * _z(m, b, a)),
    "imag": lambda m, a, b: m.imag(_z(m, a, b) * _z(m, b, a)),
    "conj": lambda m, a, b: m.conj(_z(m, a, b)) * _z(m, b, a),
    "angle": lambda m, a, b: m.angle(_z(m, a, b)),
    "polar": lambda m, a, b: m.polar(a.abs() + 0.5, b),
    "polar_broadcast": lambda m, a, b: m.polar(a.abs() + 0.5, b[:1]),
    "fft": lambda m, a, b: m.fft.fft(_z(m, a, b)),
    "fft_real_input_n": lambda m, a, b: m.fft.fft(a, n=6) * _z(m, b, a)[:, :1],
    "ifft_ortho": lambda m, a, b: m.fft.ifft(_z(m, a, b), n=3, norm="ortho"),
    "fft2_forward": lambda m, a, b: m.fft.fft2(_z(m, a, b), norm="forward"),
    "rfft": lambda m, a, b: m.fft.rfft(a, n=5) * _z(m, b, a)[:, :3],
    "rfft2": lambda m, a, b: m.fft.rfft2(a),
    "irfft": lambda m, a, b: m.fft.irfft(_z(m, a, b)),
    "irfft_odd_ortho": lambda m, a, b: m.fft.irfft(_z(m, a, b), n=5, norm="ortho"),
    "irfftn": lambda m, a, b: m.fft.irfftn(_z(m, a, b), s=(2, 6)),
    "hfft": lambda m, a, b: m.fft.hfft(_z(m, a, b), n=5),
    "ihfft": lambda m, a, b: m.fft.ihfft(a + b * b),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_SPECS))
def test_complex_double_backward(name):
    op = COMPLEX_SPECS[name]
    check_double_backward(lambda m, a, b: _loss_c(m, op(m, a, b)), [A, B])


@pytest.mark.parametrize("name", ["polar", "angle", "fft", "irfft_odd_ortho", "view_as_real"])
def test_complex_third_order(name):
    op = COMPLEX_SPECS[name]
    va, vb = R.standard_normal(A.shape), R.standard_normal(B.shape)

    def third(m):
        a, b = m.tensor(A, requires_grad=True), m.tensor(B, requires_grad=True)
        ga, gb = m.autograd.grad(_loss_c(m, op(m, a, b)), (a, b), create_graph=True)
        ha, hb = m.autograd.grad((ga * m.tensor(va) + gb * m.tensor(vb)).sum(), (a, b), create_graph=True)
        ta, tb = m.autograd.grad((ha * m.tensor(vb) + hb * m.tensor(va)).sum(), (a, b))
        return ta.detach().numpy(), tb.detach().numpy()

    for got, want in zip(third(sf), third(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_angle_at_zero_second_derivative_is_finite():
    """angle's gradient is 0 at z == 0 (torch's convention); its derivative there is 0 too
    (torch's double backward gives NaN at 0: a documented deviation), torch's elsewhere."""
    def hvp(m):
        a = m.tensor([0.0, 1.0], requires_grad=True)
        b = m.tensor([0.0, -2.0], requires_grad=True)
        ga, = m.autograd.grad((m.angle(m.complex(a, b)) ** 2).sum(), a, create_graph=True)
        ga.sum().backward()
        return ga.detach().numpy(), a.grad.numpy(), b.grad.numpy()

    for got, want in zip(hvp(sf), hvp(torch)):
        assert got[0] == 0.0
        np.testing.assert_allclose(got[1:], want[1:], rtol=1e-6, atol=1e-8)


SQ = R.standard_normal((3, 3))
BSQ = R.standard_normal((2, 3, 3))
K3 = R.standard_normal((3, 3))


def _eigh_loss(m, x, upper=False):
    w, v = m.linalg.eigh(x + x.transpose(-1, -2), UPLO="U" if upper else "L")
    # the eigenvectors' signs are a gauge: squares of their entries do not see it
    return (w ** 3).sum() + (v * v * m.tensor(K3)).sum() + ((v * v) ** 2 * w.unsqueeze(-2)).sum()


DECOMP_SPECS = {  # name: (f(m, x) -> a real scalar, x)
    "eigh": (_eigh_loss, SQ),
    "eigh_batched_upper": (lambda m, x: _eigh_loss(m, x, upper=True), BSQ),
    "eigvalsh": (lambda m, x: (m.linalg.eigvalsh(x + x.mT) ** 3).sum(), SQ),
    "qr_square": (lambda m, x: _qr_loss(m, x), SQ),
    "qr_tall_batched": (lambda m, x: _qr_loss(m, x), R.standard_normal((2, 4, 3))),
    "qr_wide": (lambda m, x: _qr_loss(m, x), R.standard_normal((2, 4))),
    "svd_square": (lambda m, x: _svd_loss(m, x, False), SQ),
    "svd_tall_full": (lambda m, x: _svd_loss(m, x, True), R.standard_normal((4, 3))),
    "svd_wide_batched": (lambda m, x: _svd_loss(m, x, False), R.standard_normal((2, 2, 4))),
    "svdvals": (lambda m, x: (m.linalg.svdvals(x) ** 3).sum(), R.standard_normal((3, 4))),
}


def _sign_fixed(m, q, r):
    """Q and R with R's diagonal made positive: a gauge-free pair (torch and LAPACK agree)."""
    d = m.sign(m.diagonal(r, 0, -2, -1))
    return q * d.unsqueeze(-2), r * d.unsqueeze(-1)


def _qr_loss(m, x):
    q, r = _sign_fixed(m, *m.linalg.qr(x))
    return (q ** 3).sum() + (r ** 3).sum()


def _svd_loss(m, x, full):
    u, s, vh = m.linalg.svd(x, full_matrices=full)
    k = s.shape[-1]
    u, vh = u[..., :, :k], vh[..., :k, :]
    # sign gauge: u_i v_i^T products and squares of entries do not see it
    return (s ** 3).sum() + ((u * u) ** 2).sum() \
        + ((vh * vh) ** 2 * s.unsqueeze(-1)).sum() + (u[..., :, :1] * vh[..., :1, :]).sum() ** 2


@pytest.mark.parametrize("name", sorted(DECOMP_SPECS))
def test_decomposition_double_backward(name):
    f, x = DECOMP_SPECS[name]
    check_double_backward(f, [x], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["eigh", "qr_wide", "svd_tall_full"])
def test_decomposition_third_order(name):
    f, x = DECOMP_SPECS[name]
    v = R.standard_normal(x.shape)

    def third(m):
        t = m.tensor(x, requires_grad=True)
        g, = m.autograd.grad(f(m, t), t, create_graph=True)
        h, = m.autograd.grad((g * m.tensor(v)).sum(), t, create_graph=True)
        t3, = m.autograd.grad((h * m.tensor(v)).sum(), t)
        return t3.detach().numpy()

    np.testing.assert_allclose(third(sf), third(torch), rtol=1e-5, atol=1e-7)
