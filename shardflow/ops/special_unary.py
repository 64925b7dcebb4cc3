"""``torch.special``'s one-argument functions that NumPy lacks, evaluated by SciPy
(``special_common``: float64 on the host, cast back; integer inputs give the default dtype).

With a derivative (PyTorch's formulas; each also has a ``backward_graph`` for higher-order
gradients, written with the same ops):

* ``entr(x) = -x log x`` (0 at 0, ``-inf`` below): ``-(1 + log x)``.
* ``erfcx(x) = exp(x^2) erfc(x)``: ``2 x erfcx(x) - 2 / sqrt(pi)``.
* ``i0e(x) = exp(-|x|) I0(x)``: ``i1e(x) - sgn(x) i0e(x)``.
* ``i1e(x) = exp(-|x|) I1(x)``: ``i0e(x) - sgn(x) i1e(x) - i1e(x) / x`` (``1/2`` at 0).
* ``ndtr(x)`` (the standard normal CDF): ``exp(-x^2 / 2) / sqrt(2 pi)``.
* ``log_ndtr(x) = log ndtr(x)``: ``exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi)``.
* ``ndtri(p)`` (the normal quantile): ``sqrt(2 pi) exp(ndtri(p)^2 / 2)``.

Without one in PyTorch (the result does not require grad, as PyTorch's;
``special_common.NoDerivative``): ``airy_ai``,
``bessel_j0/j1/y0/y1``, ``modified_bessel_i0/i1/k0/k1``, ``scaled_modified_bessel_k0/k1``
(``exp(x) K_n(x)``), ``spherical_bessel_j0`` (``sin x / x``).

Each is registered as ``special_<name>`` (ATen's name; ``torch.special.<name>`` is the public
form, re-exported by ``shardflow/special.py``) and takes ``out=``.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import OPS, register
from ..backend import get_array_module
from .special_common import NoDerivative, float_input, no_graph, on_host, scipy_special, write_out

__all__: list[str] = []

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _airy_ai(x):
    return scipy_special().airy(x)[0]


def _spherical_j0(x):
    return scipy_special().spherical_jn(0, x)


def _host_fn(spec):
    """A host function of float64 arrays: ``spec`` itself, or ``scipy.special.<spec>``."""
    return spec if callable(spec) else getattr(scipy_special(), spec)


def _scipy(name: str):
    """``scipy.special.<name>`` as a function of arrays (host evaluation)."""
    return lambda a: on_host(getattr(scipy_special(), name), a)


# ------------------------------------------------------------------ differentiable ones
class _SpecialUnary(Function):
    """``y = f(x)`` by SciPy, with ``f'`` from the subclass (arrays in ``grad``, Tensors
    in ``grad_graph``)."""

    save_inputs = (0,)
    save_output = True
    scipy_name = ""

    def forward(self, x):
        self.x = x
        self.y = on_host(getattr(scipy_special(), self.scipy_name), x)
        return self.y

    def backward(self, g):
        with np.errstate(all="ignore"):
            return (g * self.grad(self.x, self.y)).astype(g.dtype, copy=False)

    def backward_graph(self, g):
        return g * self.grad_graph(self.saved_input(0), self.saved_output(0))


class _Entr(_SpecialUnary):
    scipy_name = "entr"

    def grad(self, x, y):
        return -(1.0 + get_array_module(x).log(x))

    def grad_graph(self, x, y):
        return -(x.log() + 1.0)


class _Erfcx(_SpecialUnary):
    scipy_name = "erfcx"

    def grad(self, x, y):
        return 2.0 * x * y - _TWO_OVER_SQRT_PI

    def grad_graph(self, x, y):
        return 2.0 * x * y - _TWO_OVER_SQRT_PI


class _I0e(_SpecialUnary):
    scipy_name = "i0e"

    def grad(self, x, y):
        return _scipy("i1e")(x) - get_array_module(x).sign(x) * y

    def grad_graph(self, x, y):
        return OPS["special_i1e"](x) - x.sign() * y


class _I1e(_SpecialUnary):
    scipy_name = "i1e"

    def grad(self, x, y):
        xp = get_array_module(x)
        at_zero = x == 0
        safe = xp.where(at_zero, 1.0, x).astype(x.dtype, copy=False)
        return xp.where(at_zero, 0.5, _scipy("i0e")(x) - xp.sign(x) * y - y / safe)

    def grad_graph(self, x, y):
        at_zero = Tensor(x.array == 0)
        safe = OPS["where"](at_zero, 1.0, x)  # 1/x only where x != 0
        return OPS["where"](at_zero, 0.5, OPS["special_i0e"](x) - x.sign() * y - y / safe)


class _Ndtr(_SpecialUnary):
    scipy_name = "ndtr"

    def grad(self, x, y):
        return get_array_module(x).exp(-0.5 * x * x) / _SQRT_2PI

    def grad_graph(self, x, y):
        return (x * x * -0.5).exp() / _SQRT_2PI


class _LogNdtr(_SpecialUnary):
    scipy_name = "log_ndtr"

    def grad(self, x, y):
        return get_array_module(x).exp(-(y + 0.5 * x * x)) / _SQRT_2PI

    def grad_graph(self, x, y):
        return (-(y + x * x * 0.5)).exp() / _SQRT_2PI


class _Ndtri(_SpecialUnary):
    scipy_name = "ndtri"

    def grad(self, x, y):
        return _SQRT_2PI * get_array_module(y).exp(0.5 * y * y)

    def grad_graph(self, x, y):
        return (y * y * 0.5).exp() * _SQRT_2PI


def _differentiable(name: str, node: type[_SpecialUnary], doc: str):
    def op(input, *, out=None) -> Tensor:
        return write_out(node.apply(float_input(input)), out, f"special_{name}")

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return register(f"special_{name}")(op)


entr = _differentiable("entr", _Entr, "``torch.special.entr``: ``-x log x`` elementwise.")
erfcx = _differentiable("erfcx", _Erfcx, "``torch.special.erfcx``: ``exp(x^2) erfc(x)``.")
i0e = _differentiable("i0e", _I0e, "``torch.special.i0e``: ``exp(-|x|) I0(x)``.")
i1e = _differentiable("i1e", _I1e, "``torch.special.i1e``: ``exp(-|x|) I1(x)``.")
ndtr = _differentiable("ndtr", _Ndtr, "``torch.special.ndtr``: the standard normal CDF.")
log_ndtr = _differentiable("log_ndtr", _LogNdtr,
                           "``torch.special.log_ndtr``: the log of the standard normal CDF.")
ndtri = _differentiable("ndtri", _Ndtri,
                        "``torch.special.ndtri``: the standard normal quantile (inverse CDF).")


# ------------------------------------------------------------- no derivative in PyTorch
def _no_derivative(name: str, spec):
    def op(input, *, out=None) -> Tensor:
        def fn(a):
            return on_host(_host_fn(spec), a)

        return write_out(NoDerivative.apply(*no_graph(float_input(input)), fn=fn, name=name), out,
                         f"special_{name}")

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``torch.special.{name}`` (SciPy's ``{getattr(spec, '__name__', spec)}``); " \
                 "no derivative, as in PyTorch."
    return register(f"special_{name}")(op)


airy_ai = _no_derivative("airy_ai", _airy_ai)
bessel_j0 = _no_derivative("bessel_j0", "j0")
bessel_j1 = _no_derivative("bessel_j1", "j1")
bessel_y0 = _no_derivative("bessel_y0", "y0")
bessel_y1 = _no_derivative("bessel_y1", "y1")
modified_bessel_i0 = _no_derivative("modified_bessel_i0", "i0")
modified_bessel_i1 = _no_derivative("modified_bessel_i1", "i1")
modified_bessel_k0 = _no_derivative("modified_bessel_k0", "k0")
modified_bessel_k1 = _no_derivative("modified_bessel_k1", "k1")
scaled_modified_bessel_k0 = _no_derivative("scaled_modified_bessel_k0", "k0e")  # exp(x) K0(x)
scaled_modified_bessel_k1 = _no_derivative("scaled_modified_bessel_k1", "k1e")  # exp(x) K1(x)
spherical_bessel_j0 = _no_derivative("spherical_bessel_j0", _spherical_j0)
