"""Complex tensors (complex64 / complex128): the ops rotary position embeddings use —
``polar``, ``view_as_complex``, ``view_as_real``, ``complex``, ``real``, ``imag``, ``conj``,
``angle`` — with ``*``, ``/``, ``+``, ``-``, ``abs`` and casts handled in their own families
(arithmetic.py conjugates the other factor, elementwise.py's Abs is complex-aware,
conversion.py's cast keeps the real part going back to a real dtype).

Gradient convention (PyTorch's, conjugate Wirtinger calculus): the gradient a complex tensor
``z = x + iy`` receives from a real loss ``L`` is ``dL/dx + i dL/dy``. So for a holomorphic
``f`` the backward is ``g * conj(f'(z))``, a real input fed into a complex op gets the real
part of what flows back, and the formulas below follow from splitting into real and
imaginary parts:

* ``view_as_real(z)`` (``(..., 2)`` real pairs): ``gz = g[..., 0] + i g[..., 1]``;
  ``view_as_complex(x)``: ``gx = view_as_real(g)``.
* ``polar(r, t) = r e^{it}``: ``gr = Re(g e^{-it})``, ``gt = r Re(g conj(i e^{it}))``.
* ``complex(a, b) = a + ib``: ``ga = Re(g)``, ``gb = Im(g)``.
* ``real(z)``: ``gz = g``; ``imag(z)``: ``gz = i g``; ``conj(z)``: ``gz = conj(g)``.
* ``angle(z)``: ``gz = g i z / |z|^2`` (0 at 0); for a real input the angle is 0 or pi and
  its gradient 0.

``view_as_real`` / ``view_as_complex`` / ``real`` / ``imag`` return NumPy views when the
memory allows (PyTorch's results are views) and share the input's version counter, so an
in-place change of one is seen by autograd's saved-tensor check through the other.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import register
from ..backend import dtypes, get_array_module
from ._grad_graph import const, keep_where, sum_to
from ._util import as_tensor_arg, unbroadcast

__all__ = ["view_as_real", "view_as_complex", "polar", "complex", "real", "imag", "conj",
           "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "angle"]

_REAL_OF = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}


def _is_complex(a) -> bool:
    return a.dtype.kind == "c"


def _pairs(z):
    """(..., 2) real array of a complex array: a view when the last axis is contiguous."""
    xp = get_array_module(z)
    if z.ndim and z.strides[-1] == z.itemsize:
        return z.view(_REAL_OF[z.dtype]).reshape(z.shape + (2,))
    return xp.stack([z.real, z.imag], -1)


def _from_pairs(x):
    """Complex array of a (..., 2) real array: a view when the pairs are contiguous."""
    if x.strides[-1] == x.itemsize and (x.ndim < 2 or x.strides[-2] == 2 * x.itemsize):
        return x.view(_COMPLEX_OF[x.dtype])[..., 0]
    return x[..., 0] + 1j * x[..., 1]


def _complex_grad(g):
    """A real gradient arriving at a complex tensor: ``g + 0i`` in the matching precision."""
    return g.astype(_COMPLEX_OF.get(g.dtype, np.complex128))


class ViewAsReal(Function):
    save_inputs = ()

    def forward(self, z):
        return _pairs(z)

    def backward(self, g):
        return (g[..., 0] + 1j * g[..., 1]).astype(_COMPLEX_OF[g.dtype], copy=False)

    def backward_graph(self, g):
        return complex(g[..., 0], g[..., 1])


class ViewAsComplex(Function):
    save_inputs = ()

    def forward(self, x):
        return _from_pairs(x)

    def backward(self, g):
        return _pairs(g)

    def backward_graph(self, g):
        return ViewAsReal.apply(g)


@register("view_as_real")
def view_as_real(input: Tensor) -> Tensor:
    """``torch.view_as_real``: a complex tensor as real ``(..., 2)`` pairs (real, imag)."""
    if not _is_complex(input.array):
        raise RuntimeError(
            f"view_as_real is only supported for complex tensors, got {input.dtype}; make one "
            "with torch.complex(real, imag) or .to(torch.complex64)"
        )
    out = ViewAsReal.apply(input)
    out._version_counter = input._version_counter
    return out


@register("view_as_complex")
def view_as_complex(input: Tensor) -> Tensor:
    """``torch.view_as_complex``: real ``(..., 2)`` pairs as a complex tensor."""
    a = input.array
    if a.dtype not in _COMPLEX_OF:
        raise RuntimeError(
            f"view_as_complex is only supported for float and double tensors, but got a tensor "
            f"of scalar type: {input.dtype}; convert it with .float() first"
        )
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError(
            f"Tensor must have a last dimension of size 2, got shape {tuple(a.shape)}; reshape "
            "it as x.reshape(*x.shape[:-1], -1, 2) first"
        )
    if a.strides[-1] != a.itemsize:
        raise RuntimeError("Tensor must have a last dimension with stride 1; call .contiguous() first")
    out = ViewAsComplex.apply(input)
    out._version_counter = input._version_counter
    return out


class Polar(Function):
    save_inputs = (0, 1)
    save_output = True

    def forward(self, r, t):
        xp = get_array_module(r)
        self.r, self.t = r, t
        self.sr, self.st = r.shape, t.shape
        self.unit = xp.cos(t) + 1j * xp.sin(t)  # e^{it}
        out = r * self.unit
        return out.astype(_COMPLEX_OF[np.result_type(r, t)], copy=False)

    def backward(self, g):
        u = self.unit
        gr = gt = None
        if self.needs_input_grad[0]:
            gr = unbroadcast((g * u.conjugate()).real, self.sr).astype(self.r.dtype, copy=False)
        if self.needs_input_grad[1]:
            gt = unbroadcast(self.r * (g * (1j * u).conjugate()).real, self.st).astype(self.t.dtype, copy=False)
        return gr, gt

    def backward_graph(self, g):
        # with w = g conj(e^{it}): gr = Re(w), gt = r Re(w conj(i)) = r Im(w)
        r, t = self.saved_input(0, self.r), self.saved_input(1, self.t)
        w = g * complex(t.cos(), -t.sin())
        gr = sum_to(real(w), self.sr) if self.needs_input_grad[0] else None
        gt = sum_to(r * imag(w), self.st) if self.needs_input_grad[1] else None
        return gr, gt


def _same_real_dtype(a: Tensor, b: Tensor, op: str, names=("abs", "angle")) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{op}: Expected object of scalar type {a.dtype} but got scalar type {b.dtype} for "
            f"second argument ({names[1]}); give {names[0]} and {names[1]} the same dtype"
        )
    if a.array.dtype not in _COMPLEX_OF:
        raise RuntimeError(
            f"{op}: expected both inputs to be float or double tensors, got {a.dtype}; "
            "convert with .float() first"
        )


@register("polar")
def polar(abs, angle) -> Tensor:
    """``torch.polar(abs, angle)``: ``abs * (cos(angle) + i sin(angle))``."""
    r, t = as_tensor_arg(abs, "abs"), as_tensor_arg(angle, "angle")
    _same_real_dtype(r, t, "polar")
    return Polar.apply(r, t)


class Complex(Function):
    save_inputs = ()

    def forward(self, a, b):
        self.sa, self.sb = a.shape, b.shape
        self.da, self.db = a.dtype, b.dtype
        return (a + 1j * b).astype(_COMPLEX_OF[np.result_type(a, b)], copy=False)

    def backward(self, g):
        ga = unbroadcast(g.real, self.sa).astype(self.da, copy=False) if self.needs_input_grad[0] else None
        gb = unbroadcast(g.imag, self.sb).astype(self.db, copy=False) if self.needs_input_grad[1] else None
        return ga, gb

    def backward_graph(self, g):
        ga = sum_to(real(g), self.sa) if self.needs_input_grad[0] else None
        gb = sum_to(imag(g), self.sb) if self.needs_input_grad[1] else None
        return ga, gb


@register("complex")
def complex(real, imag) -> Tensor:
    """``torch.complex(real, imag)``: ``real + i imag`` (float -> complex64, double ->
    complex128; same dtypes required, as in PyTorch)."""
    a, b = as_tensor_arg(real, "real"), as_tensor_arg(imag, "imag")
    _same_real_dtype(a, b, "complex", names=("real", "imag"))
    return Complex.apply(a, b)


class Real(Function):
    save_inputs = ()

    def forward(self, z):
        return z.real

    def backward(self, g):
        return _complex_grad(g)

    def backward_graph(self, g):
        return complex(g, const(g.array * 0))  # g + 0i


class Imag(Function):
    save_inputs = ()

    def forward(self, z):
        return z.imag

    def backward(self, g):
        return 1j * _complex_grad(g)

    def backward_graph(self, g):
        return complex(const(g.array * 0), g)  # i g


@register("real")
def real(input) -> Tensor:
    """``torch.real``: the real part of a complex tensor; a real tensor itself."""
    t = as_tensor_arg(input)
    if not _is_complex(t.array):
        return t
    out = Real.apply(t)
    out._version_counter = t._version_counter
    return out


@register("imag")
def imag(input) -> Tensor:
    """``torch.imag``: the imaginary part of a complex tensor."""
    t = as_tensor_arg(input)
    if not _is_complex(t.array):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    out = Imag.apply(t)
    out._version_counter = t._version_counter
    return out


class Conj(Function):
    save_inputs = ()

    def forward(self, z):
        return z.conjugate()

    def backward(self, g):
        return g.conjugate()

    def backward_graph(self, g):
        return Conj.apply(g)


@register("conj", "conj_physical")
def conj(input) -> Tensor:
    """``torch.conj``: the complex conjugate (a real tensor is returned as is). PyTorch
    returns a lazily conjugated view; this is a copy, so ``is_conj`` is always False."""
    t = as_tensor_arg(input)
    if not _is_complex(t.array):
        return t
    return Conj.apply(t)


conj_physical = conj


@register("resolve_conj")
def resolve_conj(input) -> Tensor:
    """``torch.resolve_conj``: conjugation is never lazy here, so the tensor itself."""
    return as_tensor_arg(input)


@register("resolve_neg")
def resolve_neg(input) -> Tensor:
    """``torch.resolve_neg``: negation is never lazy here, so the tensor itself."""
    return as_tensor_arg(input)


@register("is_conj")
def is_conj(input) -> bool:
    """``torch.is_conj``: False (no lazy conjugate bit)."""
    as_tensor_arg(input)
    return False


class Angle(Function):
    save_inputs = (0,)

    def forward(self, z):
        xp = get_array_module(z)
        self.z = z
        if _is_complex(z):
            return xp.angle(z).astype(_REAL_OF[z.dtype], copy=False)
        out = xp.where(z < 0, np.pi, 0.0).astype(z.dtype)
        return xp.where(xp.isnan(z), z, out)

    def backward(self, g):
        z = self.z
        xp = get_array_module(z)
        if not _is_complex(z):
            return xp.zeros_like(g)
        mag2 = (z * z.conjugate()).real
        with np.errstate(divide="ignore", invalid="ignore"):
            gz = g * (1j * z) / mag2
        return xp.where(mag2 == 0, 0, gz).astype(z.dtype, copy=False)

    def backward_graph(self, g):
        if not _is_complex(self.z):
            return const(get_array_module(g.array).zeros_like(g.array))  # angle is piecewise constant
        z = self.saved_input(0, self.z)
        mag2 = real(z * Conj.apply(z))
        nonzero = self.z != 0
        safe = mag2 + const(~nonzero, mag2)  # 1 where z == 0, so no 0/0 in the graph
        gz = g * (z * 1j) / safe
        return keep_where(gz, nonzero)


@register("angle")
def angle(input) -> Tensor:
    """``torch.angle``: the argument of a complex number (0 or pi for real numbers, whose
    gradient is 0; integers give the default float dtype)."""
    t = as_tensor_arg(input)
    if t.array.dtype.kind in "biu":
        t = _wrap(t.array.astype(dtypes.get_default_dtype().np))
    return Angle.apply(t)
