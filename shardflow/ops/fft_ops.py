"""Discrete Fourier transforms, ``torch.fft``'s functions as ops named like torch's aten ops
(``fft_fft``, ``fft_rfft2`` ...; ``shardflow.fft`` re-exports them under the short names):
``fft``/``ifft``/``fft2``/``ifft2``/``fftn``/``ifftn`` (complex to complex), ``rfft``/
``rfft2``/``rfftn`` (real to the one-sided half spectrum), ``irfft``/``irfft2``/``irfftn``
(back to real), ``hfft``/``ihfft``/``hfft2``/``ihfft2``/``hfftn``/``ihfftn`` (Hermitian
signals), ``fftfreq``/``rfftfreq``,
``fftshift``/``ifftshift``.

Semantics are torch's: ``n`` / ``s`` zero-pad or trim the input along each transformed dim
first; ``dim`` defaults to the last dim (the last two for ``*2``, every dim or the last
``len(s)`` for ``*n``); ``norm`` scales the forward transform by 1 ('backward', the default),
``1/n`` ('forward') or ``1/sqrt(n)`` ('ortho'), and the inverse by the reciprocal. Real
float32 input gives complex64, float64 complex128; integer input is taken as float32 (torch's
default dtype); float16/bfloat16 are refused (torch's CPU build has no half FFT). The
forward is the backend's pocketfft (NumPy) or cuFFT (CuPy) ``xp.fft``.

Gradients (PyTorch's convention for complex tensors: the gradient of a real loss is
``dL/dRe + i dL/dIm``; see docs/COMPAT.md "Complex tensors"). Every transform is linear, so
its backward is its adjoint:

* c2c: ``gx = ifft(g)`` with the *dual* norm ('backward' <-> 'forward', 'ortho' stays),
  i.e. the conjugate DFT at the same scale; a real input keeps the real part.
* r2c (``rfft``, one-sided): ``g`` zero-filled to the full length ``n``, then the c2c
  adjoint, real part.
* c2r (``irfft``): ``gx = rfft(g)`` at the forward's scale, with the bins that stand for two
  (conjugate) frequencies — all but bin 0 and, for even ``n``, the Nyquist bin — doubled
  (torch's ``fft_c2r_backward``).
* ``n`` / ``s``: padding's adjoint is trimming and trimming's is zero-padding, applied to the
  gradient last. The multi-dim real transforms are a c2c over the leading dims composed with
  the one-dim real transform on the last (``torch.fft``'s definition), ``hfft(x) =
  irfft(conj(x))`` and ``ihfft(x) = conj(rfft(x))`` at the dual norm, so their gradients
  compose.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ..autograd.dispatch import register
from ..backend import get_array_module
from ..backend.scipy_lib import scipy_module
from ._factory_options import check_factory_options
from ._grad_graph import linear_adjoint
from ._util import as_tensor_arg

__all__ = ["fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft",
           "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft",
           "fft_hfft2", "fft_ihfft2", "fft_hfftn", "fft_ihfftn", "fft_fftfreq", "fft_rfftfreq", "fft_fftshift", "fft_ifftshift"]

_NORMS = ("backward", "forward", "ortho")
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128),
               np.dtype(np.complex64): np.dtype(np.complex64), np.dtype(np.complex128): np.dtype(np.complex128)}
_REAL_OF = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64),
            np.dtype(np.float32): np.dtype(np.float32), np.dtype(np.float64): np.dtype(np.float64)}


# ----------------------------------------------------------------------------- helpers
def _norm(norm, op: str) -> str:
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f'{op}: Invalid normalization mode: "{norm}"; use "backward" (default), '
                         '"forward" or "ortho"')
    return norm


def _input(x, op: str, real_only: bool = False) -> Tensor:
    """The input as a float32/float64 (or complex) tensor; integers and bools become float32."""
    x = as_tensor_arg(x)
    kind, size = x.array.dtype.kind, x.array.dtype.itemsize
    if kind in "biu":
        x = x.float()
    elif kind == "V" or (kind == "f" and size < 4):
        raise RuntimeError(f"{op}: Unsupported dtype {x.dtype} (torch's CPU FFT has no half precision); "
                           "convert with .float() first")
    if real_only and x.array.dtype.kind == "c":
        raise RuntimeError(f"{op} expects a real input tensor, but got {x.dtype}; take .real or use "
                           "torch.fft.fft for complex input")
    return x


def _dims(x: Tensor, dim, s, op: str, default_last: int | None):
    """(dims, sizes): the transformed dims (normalised, in order) and their output lengths."""
    nd = x.ndim
    if dim is None:
        if s is not None:
            dims = list(range(nd - len(s), nd))
        elif default_last is None:
            dims = list(range(nd))
        else:
            dims = list(range(nd - default_last, nd))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    norm_dims = []
    for d in dims:
        if not -nd <= d < nd:
            raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                             f"but got {d})")
        norm_dims.append(d % nd)
    if len(set(norm_dims)) != len(norm_dims):
        raise RuntimeError(f"{op}: dims must be unique, got {tuple(dims)}")
    if s is None:
        sizes = [x.shape[d] for d in norm_dims]
    else:
        s = [s] if isinstance(s, int) else list(s)
        if len(s) != len(norm_dims):
            raise RuntimeError(f"{op}: When given, dim and shape arguments must have the same length "
                               f"(s={tuple(s)}, dim={tuple(dims)})")
        sizes = [x.shape[d] if n == -1 else int(n) for d, n in zip(norm_dims, s)]
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"{op}: Invalid number of data points ({n}) specified")
    return norm_dims, sizes


def _unscaled_double(xp, name: str, a, axis: int, norm: str):
    """``xp.fft.<name>(a, axis=axis, norm=norm)``, fast where NumPy is slow.

    NumPy passes its scale to pocketfft as the Python int 1 when there is none to apply (a
    forward transform with norm 'backward', an inverse with 'forward'); the int selects the
    double-precision loop and casts the input to it row by row through buffers: float32 and
    complex64 are transformed in double precision there, 5-8x slower than the same double
    transform of an already-cast array ((404, 400) complex64 ifft: 2.8 ms vs 0.5 ms). This
    casts once and runs SciPy's pocketfft (NumPy's own code, the same double-precision sums:
    bit-identical, ``tests/ops/test_slow_ops.py``), then casts back to NumPy's result dtype."""
    unscaled = norm in (None, "backward") if name in ("fft", "rfft") else norm == "forward"
    if xp is not np or not unscaled:
        return getattr(xp.fft, name)(a, axis=axis, norm=norm)
    wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64, copy=False)
    out = getattr(scipy_module("fft"), name)(wide, axis=axis, norm=norm)
    return out.astype(np.result_type(a.dtype, np.complex64), copy=False)


def _resize(xp, a, dims, sizes):
    """``a`` trimmed or zero-padded (at the end) to ``sizes`` along ``dims``."""
    for d, n in zip(dims, sizes):
        have = a.shape[d]
        if have > n:
            a = a[(slice(None),) * d + (slice(0, n),)]
        elif have < n:
            pad = [(0, 0)] * a.ndim
            pad[d] = (0, n - have)
            a = xp.pad(a, pad)
    return a


# ----------------------------------------------------------------------------- Functions
class C2C(Function):
    """Complex-to-complex transform over ``dims`` (input resized to ``sizes``)."""

    save_inputs = ()

    def forward(self, x, dims=(), sizes=(), norm="backward", inverse=False):
        self.in_shape, self.in_dtype = x.shape, x.dtype
        self.dims, self.sizes, self.norm, self.inverse = dims, sizes, norm, inverse
        return self.linear_forward(x)

    def linear_forward(self, x):
        """The transform of ``x`` with the saved dims, sizes and norm (the adjoint of
        ``backward``: the second derivative's map, _grad_graph.py)."""
        xp = get_array_module(x)
        f = xp.fft.ifftn if self.inverse else xp.fft.fftn
        a = _resize(xp, x, self.dims, self.sizes)
        return f(a, axes=self.dims, norm=self.norm).astype(_COMPLEX_OF[x.dtype], copy=False)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear (_grad_graph.py)

    def backward(self, g):
        xp = get_array_module(g)
        f = xp.fft.fftn if self.inverse else xp.fft.ifftn
        gx = f(g, axes=self.dims, norm=_DUAL[self.norm])
        gx = _resize(xp, gx, self.dims, [self.in_shape[d] for d in self.dims])
        if self.in_dtype.kind != "c":
            gx = gx.real
        return gx.astype(self.in_dtype, copy=False)


class R2C(Function):
    """One-sided real-to-complex transform along ``dim`` (input resized to ``n``)."""

    save_inputs = ()

    def forward(self, x, dim=-1, n=1, norm="backward"):
        self.in_shape, self.in_dtype, self.dim, self.n, self.norm = x.shape, x.dtype, dim, n, norm
        return self.linear_forward(x)

    def linear_forward(self, x):
        """The transform of ``x`` with the saved dim, length and norm."""
        xp = get_array_module(x)
        a = _resize(xp, x, [self.dim], [self.n])
        return _unscaled_double(xp, "rfft", a, self.dim, self.norm).astype(_COMPLEX_OF[x.dtype], copy=False)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear (_grad_graph.py)

    def backward(self, g):
        xp = get_array_module(g)
        full = _resize(xp, g, [self.dim], [self.n])  # the missing negative frequencies: zero
        gx = _unscaled_double(xp, "ifft", full, self.dim, _DUAL[self.norm]).real
        gx = _resize(xp, gx, [self.dim], [self.in_shape[self.dim]])
        return gx.astype(self.in_dtype, copy=False)


class C2R(Function):
    """Complex (one-sided half spectrum) to real transform along ``dim``, output length ``n``."""

    save_inputs = ()

    def forward(self, x, dim=-1, n=2, norm="backward"):
        self.in_shape, self.in_dtype, self.dim, self.n, self.norm = x.shape, x.dtype, dim, n, norm
        return self.linear_forward(x)

    def linear_forward(self, x):
        """The transform of ``x`` with the saved dim, length and norm."""
        xp = get_array_module(x)
        n, dim = self.n, self.dim
        a = _resize(xp, x, [dim], [n // 2 + 1])
        return xp.fft.irfft(a, n=n, axis=dim, norm=self.norm).astype(_REAL_OF[x.dtype], copy=False)

    def backward_graph(self, g):
        return linear_adjoint(self, g)  # linear (_grad_graph.py)

    def backward(self, g):
        xp = get_array_module(g)
        n, dim = self.n, self.dim
        # the forward's scale: irfft's norm on the inverse is rfft's dual on the forward
        gx = xp.fft.rfft(g, axis=dim, norm=_DUAL[self.norm])
        doubled = n - (n // 2 + 1)  # bins 1..doubled stand for a frequency and its conjugate
        if doubled > 0:
            scale = xp.ones(gx.shape[dim], dtype=_REAL_OF[gx.dtype])
            scale[1:1 + doubled] = 2
            shape = [1] * gx.ndim
            shape[dim] = gx.shape[dim]
            gx = gx * scale.reshape(shape)
        gx = _resize(xp, gx, [dim], [self.in_shape[dim]])
        if self.in_dtype.kind != "c":
            gx = gx.real
        return gx.astype(self.in_dtype, copy=False)


# ----------------------------------------------------------------------------- c2c
def _c2c(input, s, dim, norm, op, inverse, default_last):
    x = _input(input, op)
    dims, sizes = _dims(x, dim, s, op, default_last)
    return C2C.apply(x, dims=tuple(dims), sizes=tuple(sizes), norm=_norm(norm, op), inverse=inverse)


@register("fft_fft")
def fft_fft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """``torch.fft.fft``: the 1-D DFT along ``dim`` (``n`` points)."""
    return _c2c(input, None if n is None else [n], [dim], norm, "fft.fft", False, 1)


@register("fft_ifft")
def fft_ifft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """``torch.fft.ifft``: the inverse of ``fft``."""
    return _c2c(input, None if n is None else [n], [dim], norm, "fft.ifft", True, 1)


@register("fft_fft2")
def fft_fft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``torch.fft.fft2``: the DFT over two dims (the last two by default)."""
    return _c2c(input, s, dim, norm, "fft.fft2", False, 2)


@register("fft_ifft2")
def fft_ifft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``torch.fft.ifft2``: the inverse of ``fft2``."""
    return _c2c(input, s, dim, norm, "fft.ifft2", True, 2)


@register("fft_fftn")
def fft_fftn(input, s=None, dim=None, norm=None) -> Tensor:
    """``torch.fft.fftn``: the DFT over ``dim`` (every dim, or the last ``len(s)``)."""
    return _c2c(input, s, dim, norm, "fft.fftn", False, None)


@register("fft_ifftn")
def fft_ifftn(input, s=None, dim=None, norm=None) -> Tensor:
    """``torch.fft.ifftn``: the inverse of ``fftn``."""
    return _c2c(input, s, dim, norm, "fft.ifftn", True, None)


# ----------------------------------------------------------------------------- real
def _rfftn(input, s, dim, norm, op, default_last):
    x = _input(input, op, real_only=True)
    dims, sizes = _dims(x, dim, s, op, default_last)
    norm = _norm(norm, op)
    y = R2C.apply(x, dim=dims[-1], n=sizes[-1], norm=norm)
    if len(dims) > 1:
        y = C2C.apply(y, dims=tuple(dims[:-1]), sizes=tuple(sizes[:-1]), norm=norm, inverse=False)
    return y


def _irfftn(input, s, dim, norm, op, default_last):
    x = _input(input, op)
    dims, sizes = _dims(x, dim, s, op, default_last)
    if s is None:  # the last dim's output length: 2 (m - 1) for m input bins
        sizes[-1] = 2 * (x.shape[dims[-1]] - 1)
        if sizes[-1] < 1:
            raise RuntimeError(f"{op}: Invalid number of data points ({sizes[-1]}) specified")
    norm = _norm(norm, op)
    if len(dims) > 1:
        x = C2C.apply(x, dims=tuple(dims[:-1]), sizes=tuple(sizes[:-1]), norm=norm, inverse=True)
    return C2R.apply(x, dim=dims[-1], n=sizes[-1], norm=norm)


@register("fft_rfft")
def fft_rfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """``torch.fft.rfft``: the DFT of a real signal, frequencies ``0 .. n // 2``."""
    return _rfftn(input, None if n is None else [n], [dim], norm, "fft.rfft", 1)


@register("fft_irfft")
def fft_irfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """``torch.fft.irfft``: the real signal of ``n`` points (default ``2 (m - 1)``) whose
    one-sided spectrum is ``input``."""
    return _irfftn(input, None if n is None else [n], [dim], norm, "fft.irfft", 1)


@register("fft_rfft2")
def fft_rfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``torch.fft.rfft2``: ``rfft`` over the last of ``dim``, ``fft`` over the other."""
    return _rfftn(input, s, dim, norm, "fft.rfft2", 2)


@register("fft_irfft2")
def fft_irfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``torch.fft.irfft2``: the inverse of ``rfft2``."""
    return _irfftn(input, s, dim, norm, "fft.irfft2", 2)


@register("fft_rfftn")
def fft_rfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """``torch.fft.rfftn``: ``rfft`` over the last of ``dim``, ``fft`` over the others."""
    return _rfftn(input, s, dim, norm, "fft.rfftn", None)


@register("fft_irfftn")
def fft_irfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """``torch.fft.irfftn``: the inverse of ``rfftn``."""
    return _irfftn(input, s, dim, norm, "fft.irfftn", None)


def _hfftn(input, s, dim, norm, op, default_last):
    from .complex_ops import conj

    x = _input(input, op)
    if x.array.dtype.kind == "c":
        x = conj(x)
    return _irfftn(x, s, dim, _DUAL[_norm(norm, op)], op, default_last)


def _ihfftn(input, s, dim, norm, op, default_last):
    from .complex_ops import conj

    return conj(_rfftn(input, s, dim, _DUAL[_norm(norm, op)], op, default_last))


@register("fft_hfft")
def fft_hfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """``torch.fft.hfft``: the real spectrum of a Hermitian signal given by its first half,
    ``irfft(conj(input))`` at the dual norm."""
    return _hfftn(input, None if n is None else [n], [dim], norm, "fft.hfft", 1)


@register("fft_ihfft")
def fft_ihfft(input, n=None, dim: int = -1, norm=None) -> Tensor:
    """``torch.fft.ihfft``: the inverse of ``hfft``, ``conj(rfft(input))`` at the dual norm."""
    return _ihfftn(input, None if n is None else [n], [dim], norm, "fft.ihfft", 1)


@register("fft_hfft2")
def fft_hfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``torch.fft.hfft2``: ``hfftn`` over two dims (the last two by default)."""
    return _hfftn(input, s, dim, norm, "fft.hfft2", 2)


@register("fft_ihfft2")
def fft_ihfft2(input, s=None, dim=(-2, -1), norm=None) -> Tensor:
    """``torch.fft.ihfft2``: the inverse of ``hfft2``."""
    return _ihfftn(input, s, dim, norm, "fft.ihfft2", 2)


@register("fft_hfftn")
def fft_hfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """``torch.fft.hfftn``: the real n-dim DFT of a signal Hermitian in every transformed dim,
    given by the half of its last dim (``irfftn(conj(input))`` at the dual norm: the
    Hermitian extension of ``conj(x)`` is the conjugate of ``x``'s)."""
    return _hfftn(input, s, dim, norm, "fft.hfftn", None)


@register("fft_ihfftn")
def fft_ihfftn(input, s=None, dim=None, norm=None) -> Tensor:
    """``torch.fft.ihfftn``: the inverse of ``hfftn``, ``conj(rfftn(input))`` at the dual norm."""
    return _ihfftn(input, s, dim, norm, "fft.ihfftn", None)


# ----------------------------------------------------------------------------- helpers
def _freq_dtype(dtype):
    from ..backend import as_dtype

    return as_dtype(dtype) if dtype is not None else None


@register("fft_fftfreq")
def fft_fftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """``torch.fft.fftfreq``: the sample frequencies ``[0, 1, ..., -(n // 2), ..., -1] / (d n)``."""
    check_factory_options("fft.fftfreq", layout)
    from .creation import arange

    k = arange(n, dtype=_freq_dtype(dtype), device=device)
    if k.array.dtype.kind != "f":
        k = k.float()
    k = ((k + n // 2) % n - n // 2) if n else k
    out_t = k * (1.0 / (d * n)) if n else k
    return out_t.requires_grad_(requires_grad) if requires_grad else out_t


@register("fft_rfftfreq")
def fft_rfftfreq(n: int, d: float = 1.0, *, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """``torch.fft.rfftfreq``: ``[0, 1, ..., n // 2] / (d n)``."""
    check_factory_options("fft.rfftfreq", layout)
    from .creation import arange

    k = arange(n // 2 + 1, dtype=_freq_dtype(dtype), device=device)
    if k.array.dtype.kind != "f":
        k = k.float()
    out_t = k * (1.0 / (d * n))
    return out_t.requires_grad_(requires_grad) if requires_grad else out_t


def _shift(input, dim, sign: int) -> Tensor:
    from .shape import roll

    x = as_tensor_arg(input)
    dims = list(range(x.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    if not dims:
        return x * 1
    shifts = [sign * (x.shape[d] // 2) for d in dims]
    return roll(x, shifts, dims)


@register("fft_fftshift")
def fft_fftshift(input, dim=None) -> Tensor:
    """``torch.fft.fftshift``: the zero frequency moved to the centre (a roll by ``n // 2``
    along ``dim``, every dim by default)."""
    return _shift(input, dim, 1)


@register("fft_ifftshift")
def fft_ifftshift(input, dim=None) -> Tensor:
    """``torch.fft.ifftshift``: the inverse of ``fftshift`` (a roll by ``-(n // 2)``)."""
    return _shift(input, dim, -1)

