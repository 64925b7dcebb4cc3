"""Gamma and Dirichlet sampling with reparameterised (implicit) gradients, PyTorch's private
ops of the same names: ``_standard_gamma``, ``_standard_gamma_grad``, ``_sample_dirichlet``,
``_dirichlet_grad``. ``distributions.Gamma/Beta/Dirichlet.rsample`` are built on them.

Sampling: torch's ``sample_gamma`` (Marsaglia-Tsang) on torch's stream, element by element
(``backend/random_stream.py``: the same draws as torch after the same ``manual_seed``),
clamped below at the dtype's smallest normal number, then moved to the parameter's device. A
Dirichlet sample is double gammas normalised over the last dim, clamped to
``[tiny, nextafter(1, 0)]`` of the dtype, as torch's CPU kernel does.

Implicit gradients (Figurnov et al. 2018, "Implicit Reparameterization Gradients"): for
``x ~ Gamma(alpha, 1)`` drawn by inverting its CDF ``F``, ``dx/dalpha = -(dF/dalpha) / f(x)``.
PyTorch approximates that quotient (``ATen/native/Distributions.h``) and so does this file,
with the same branches and coefficients, element-parallel in float64:

* ``standard_gamma_grad``: a Taylor series of the CDF for ``x < 0.8``; Rice's saddle point
  expansion for ``alpha > 8``; a bivariate rational approximation in ``log(x/alpha)`` and
  ``log(alpha)`` elsewhere.
* ``dirichlet_grad(x, alpha, total)``: the same quotient for the marginal
  ``x ~ Beta(alpha, total - alpha)`` divided by ``1 - x``: Taylor series near 0 and near 1,
  a saddle point expansion when both Beta parameters exceed 6, else a rational correction of
  an analytic approximation. The Dirichlet backward is PyTorch's
  ``grad * (g - sum(x * g, -1))``.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import CPU, device_of, get_array_module, to_device
from ..backend import random as _random
from ..backend import random_stream as _stream
from ._util import as_tensor_arg
from .special_functions import digamma_array

__all__ = ["_standard_gamma", "_standard_gamma_grad", "_sample_dirichlet", "_dirichlet_grad"]


def _host_gamma(alpha, generator):
    """Standard gamma draws for every element of ``alpha`` (any device), in its dtype:
    torch's ``sample_gamma`` on torch's stream (``backend/random_stream.py``)."""
    x = _stream.standard_gamma(_random.get(generator), to_device(alpha, CPU))
    return to_device(x, device_of(alpha)) if not isinstance(alpha, np.ndarray) else x


def _host_dirichlet(alpha, generator):
    """Dirichlet draws over the last dim, torch's way (double gammas, normalised, clamped)."""
    x = _stream.dirichlet(_random.get(generator), to_device(alpha, CPU))
    return to_device(x, device_of(alpha)) if not isinstance(alpha, np.ndarray) else x


def standard_gamma_grad_array(alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1) (PyTorch's standard_gamma_grad_one), float64."""
    xp = get_array_module(x)
    with np.errstate(all="ignore"):
        # Taylor series of the CDF for small x
        numer = xp.ones_like(x)
        denom = alpha.copy()
        series1 = numer / denom
        series2 = numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-x / i)
            denom = denom + 1.0
            series1 = series1 + numer / denom
            series2 = series2 + numer / (denom * denom)
        pow_x_alpha = x ** alpha
        gamma_pdf = x ** (alpha - 1.0) * xp.exp(-x)
        gamma_cdf = pow_x_alpha * series1
        gamma_cdf_alpha = (xp.log(x) - digamma_array(alpha)) * gamma_cdf - pow_x_alpha * series2
        small = -gamma_cdf_alpha / gamma_pdf
        small = xp.where(xp.isnan(small), 0.0, small)

        # Rice saddle point expansion for large alpha
        numer_1 = 1.0 + 24.0 * alpha * (1.0 + 12.0 * alpha)
        numer_2 = (1440.0 * alpha * alpha + 6.0 * x * (53.0 - 120.0 * x)
                   - 65.0 * x * x / alpha + alpha * (107.0 + 3600.0 * x))
        near_mean = numer_1 * numer_2 / (1244160.0 * alpha ** 4)
        denom = xp.sqrt(8.0 * alpha)
        term2 = denom / (alpha - x)
        term3 = (x - alpha - alpha * xp.log(x / alpha)) ** -1.5
        term23 = xp.where(x < alpha, term2 - term3, term2 + term3)
        term1 = xp.log(x / alpha) * term23 - xp.sqrt(2.0 / alpha) * (alpha + x) / ((alpha - x) ** 2)
        stirling = 1.0 + 1.0 / (12.0 * alpha) * (1.0 + 1.0 / (24.0 * alpha))
        saddle = -stirling * (x * term1) / denom
        large = xp.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near_mean, saddle)

        # bivariate rational approximation
        u = xp.log(x / alpha)
        v = xp.log(alpha)
        coef_v = [c0 + u * (c1 + u * c2) for c0, c1, c2 in zip(*_GAMMA_COEF_UV)]
        p = coef_v[0] + v * (coef_v[1] + v * (coef_v[2] + v * coef_v[3]))
        q = coef_v[4] + v * (coef_v[5] + v * (coef_v[6] + v * coef_v[7]))
        rational = xp.exp(p / q)
    return xp.where(x < 0.8, small, xp.where(alpha > 8.0, large, rational))


_GAMMA_COEF_UV = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
     -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
     0.00085092367, -1.5247877e-07),
)


def _beta_grad_alpha_small(xp, x, alpha, beta):
    factor = digamma_array(alpha) - digamma_array(alpha + beta) - xp.log(x)
    numer = xp.ones_like(x)
    series = numer / alpha * (factor + 1.0 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1.0 / denom)
    result = x * (1.0 - x) ** -beta * series
    return xp.where(xp.isnan(result), 0.0, result)


def _beta_grad_beta_small(xp, x, alpha, beta):
    factor = digamma_array(alpha + beta) - digamma_array(beta)
    numer = xp.ones_like(x)
    betas = xp.ones_like(x)
    dbetas = xp.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    result = -((1.0 - x) ** (1.0 - beta)) * series
    return xp.where(xp.isnan(result), 0.0, result)


def _beta_grad_alpha_mid(xp, x, alpha, beta):
    total = alpha + beta
    mean = alpha / total
    std = xp.sqrt(alpha * beta / (total + 1.0)) / total
    poly = 47 * x * beta ** 4 + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * beta ** 3 + alpha * (
            3 * (59 + 180 * beta - 90 * x) * beta ** 2 + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha ** 3 * beta ** 2 * (1 + 12 * total)
    at_mean = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / xp.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * alpha * alpha * (x - 1) + alpha * beta * (x - 1) - x * beta * beta
    axbx = alpha * (x - 1) + beta * x
    term1_den = xp.sqrt(2 * alpha / beta) * total ** 1.5 * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * xp.log(alpha / (total * x))
    term3 = xp.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = (beta * xp.log(beta / (total * (1 - x))) + alpha * xp.log(alpha / (total * x))) ** -1.5
    term1234 = term1 + term2 * (term3 + xp.where(x < mean, term4, -term4))
    away = stirling * prefactor * term1234
    return xp.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), at_mean, away)


_DIRICHLET_C = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]],
])


def dirichlet_grad_array(x, alpha, total):
    """PyTorch's dirichlet_grad_one, element-parallel in float64."""
    xp = get_array_module(x)
    with np.errstate(all="ignore"):
        beta = total - alpha
        boundary = total * x * (1 - x)
        near_0 = _beta_grad_alpha_small(xp, x, alpha, beta)
        near_1 = -_beta_grad_beta_small(xp, 1 - x, beta, alpha)
        mid = _beta_grad_alpha_mid(xp, x, alpha, beta)
        u = xp.log(x)
        a = xp.log(alpha) - u
        b = xp.log(total) - a
        pow_u = (1.0, u, u * u)
        pow_a = (1.0, a, a * a)
        p = xp.zeros_like(x)
        q = xp.zeros_like(x)
        c = _DIRICHLET_C
        for i in range(3):
            for j in range(3):
                ua = pow_u[i] * pow_a[j]
                p = p + ua * (c[0, i, j, 0] + b * (c[0, i, j, 1] + b * (c[0, i, j, 2] + b * c[0, i, j, 3])))
                q = q + ua * (c[1, i, j, 0] + b * (c[1, i, j, 1] + b * (c[1, i, j, 2] + b * c[1, i, j, 3])))
        approx = x * (digamma_array(total) - digamma_array(alpha)) / beta
        rational = p / q * approx
    out = xp.where((alpha > 6) & (beta > 6), mid, rational)
    out = xp.where((x >= 0.5) & (boundary < 0.75), near_1, out)
    return xp.where((x <= 0.5) & (boundary < 2.5), near_0, out)


def _f64(a):
    return a.astype(np.float64)


class StandardGamma(Function):
    """x ~ Gamma(alpha, 1); backward g * dx/dalpha (implicit reparameterisation)."""

    save_inputs = (0,)
    save_output = True

    def forward(self, alpha, generator=None):
        self.alpha = alpha
        self.x = _host_gamma(alpha, generator)
        return self.x

    def backward(self, g):
        d = standard_gamma_grad_array(_f64(self.alpha), _f64(self.x))
        return (g * d).astype(g.dtype)


class Dirichlet(Function):
    """x ~ Dirichlet(alpha) over the last dim; PyTorch's ``_Dirichlet`` backward."""

    save_inputs = (0,)
    save_output = True

    def forward(self, alpha, generator=None):
        self.alpha = alpha
        self.x = _host_dirichlet(alpha, generator)
        return self.x

    def backward(self, g):
        x, alpha = _f64(self.x), _f64(self.alpha)
        total = get_array_module(alpha).broadcast_to(alpha.sum(-1, keepdims=True), alpha.shape)
        grad = dirichlet_grad_array(x, alpha, total)
        g64 = _f64(g)
        return (grad * (g64 - (x * g64).sum(-1, keepdims=True))).astype(g.dtype)


def _float_param(alpha, op: str) -> Tensor:
    t = as_tensor_arg(alpha)
    if t.array.dtype.kind != "f":
        raise RuntimeError(f"{op}: expected a floating point tensor of concentrations, got {t.dtype}")
    return t


@register("_standard_gamma")
def _standard_gamma(input, generator=None) -> Tensor:
    """``torch._standard_gamma(alpha)``: one Gamma(alpha, 1) draw per element,
    differentiable in ``alpha``."""
    return StandardGamma.apply(_float_param(input, "_standard_gamma"), generator=generator)


@register("_standard_gamma_grad")
def _standard_gamma_grad(self, output) -> Tensor:
    """``torch._standard_gamma_grad(alpha, x)``: dx/dalpha of a standard gamma draw."""
    a, x = as_tensor_arg(self), as_tensor_arg(output)
    d = standard_gamma_grad_array(_f64(a.array), _f64(x.array))
    return Tensor(d.astype(x.array.dtype))


@register("_sample_dirichlet")
def _sample_dirichlet(input, generator=None) -> Tensor:
    """``torch._sample_dirichlet(alpha)``: Dirichlet draws over the last dim (no gradient:
    ``distributions.Dirichlet.rsample`` differentiates through :func:`dirichlet_rsample`)."""
    a = _float_param(input, "_sample_dirichlet")
    return Tensor(_host_dirichlet(a.array, generator))


def dirichlet_rsample(concentration, generator=None) -> Tensor:
    """Dirichlet draws differentiable in ``concentration`` (PyTorch's ``_Dirichlet.apply``)."""
    return Dirichlet.apply(_float_param(concentration, "Dirichlet.rsample"), generator=generator)


@register("_dirichlet_grad")
def _dirichlet_grad(x, alpha, total) -> Tensor:
    """``torch._dirichlet_grad(x, alpha, total)``: the scaled Beta reparameterised gradient."""
    xs, a, t = as_tensor_arg(x), as_tensor_arg(alpha), as_tensor_arg(total)
    d = dirichlet_grad_array(_f64(xs.array), _f64(a.array), _f64(t.array))
    return Tensor(d.astype(xs.array.dtype))

