"""The fft family's gradients with ``n=``/``s=``, all three ``norm``s and ``dim=``, real and
complex inputs: against torch's (float64) and against central finite differences of
``L(x) = sum(re(conj(G) * f(x)))`` (for a complex input the gradient is
``dL/dre + i dL/dim``, torch's convention). ``irfft``/``hfft`` are the Hermitian trap: their
backward must weigh the interior bins twice and drop the imaginary parts of bins 0 and
n/2. All passed when written (session 38): a guard, not a fix."""

import numpy as np
import pytest
import torch

import shardflow as sf

CASES = [(fn, cplx, n, norm, dim)
         for fn in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
         for cplx in (False, True) if not (cplx and fn in ("rfft", "ihfft"))
         for n, norm, dim in ((None, None, -1), (5, "ortho", 0), (8, "forward", -1),
                              (3, "backward", 1))]
CASES_N = [(fn, cplx, s, norm, dim)
           for fn in ("fft2", "ifftn", "rfftn", "irfft2", "irfftn", "hfftn", "ihfft2")
           for cplx in (False, True) if not (cplx and fn in ("rfftn", "ihfft2"))
           for s, norm, dim in ((None, None, (-2, -1)), ((5, 4), "ortho", (0, 2)),
                                ((3, 6), "forward", (-1, 0)))]


def _x(cplx):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5))
    return x + 1j * rng.standard_normal(x.shape) if cplx else x


def _grad(L, fn, x, kw, g):
    t = L.tensor(x, requires_grad=True)
    out = getattr(L.fft, fn)(t, **kw)
    out.backward(L.tensor(g if out.dtype.is_complex else g.real))
    return out.detach().resolve_conj().numpy(), t.grad.resolve_conj().numpy()


def _check(fn, cplx, kw):
    x = _x(cplx)
    want_out = getattr(torch.fft, fn)(torch.tensor(x), **kw)
    rng = np.random.default_rng(1)
    g = rng.standard_normal(want_out.shape) + 1j * rng.standard_normal(want_out.shape)
    out_s, grad_s = _grad(sf, fn, x, kw, g)
    out_t, grad_t = _grad(torch, fn, x, kw, g)
    np.testing.assert_allclose(out_s, out_t, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_s, grad_t, rtol=1e-10, atol=1e-10)

    def loss(v):
        out = getattr(sf.fft, fn)(sf.tensor(v), **kw).numpy()
        return float(np.sum(np.real(np.conj(g if np.iscomplexobj(out) else g.real) * out)))

    eps, fd = 1e-6, np.zeros(x.shape, x.dtype)
    for idx in np.ndindex(x.shape):
        for unit in ((1, 1j) if cplx else (1,)):
            d = np.zeros(x.shape, x.dtype)
            d[idx] = eps * unit
            fd[idx] += unit * (loss(x + d) - loss(x - d)) / (2 * eps)
    np.testing.assert_allclose(grad_s, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,cplx,n,norm,dim", CASES)
def test_fft_gradient_matches_torch_and_finite_differences(fn, cplx, n, norm, dim):
    _check(fn, cplx, dict(n=n, norm=norm, dim=dim))


@pytest.mark.parametrize("fn,cplx,s,norm,dim", CASES_N)
def test_fftn_gradient_matches_torch_and_finite_differences(fn, cplx, s, norm, dim):
    _check(fn, cplx, dict(s=s, norm=norm, dim=dim))
