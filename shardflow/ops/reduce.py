"""Reductions: sum, mean, prod, max/min (values+indices along a dim), amax/amin, argmax/argmin,
aminmax, var/std (+ var_mean/std_mean), logsumexp, cumsum/cumprod, norm/vector_norm,
all/any/count_nonzero.

Conventions (PyTorch's):

* ``dim`` is an int, a sequence of ints, or None (all dims); ``keepdim`` keeps reduced dims
  as size 1.
* ``max(x, dim)`` / ``min(x, dim)`` return a named tuple ``(values, indices)`` (a ``tuple``
  subclass, like ``torch.return_types.max``). Their backward scatters the gradient to the
  selected index. ``max(x)`` without a dim, ``amax`` and ``amin`` split the gradient evenly
  between tied extremes (PyTorch's ``evenly_distribute_backward``).
* float16/bfloat16 inputs: ``sum``, ``mean``, ``var``/``std``, ``logsumexp``'s sum and
  ``cumsum`` (and its gradient) accumulate in float32 and round once to the input's dtype, as PyTorch's CPU kernels do (its accumulate type for the two is float). NumPy
  would add in the 2-byte dtype itself (each partial sum rounded: a bfloat16 sum of 128
  numbers was off by several ulps; an autocast bias gradient is such a sum).
* Integer/bool inputs: ``sum``/``prod``/``cumsum`` accumulate in int64; ``var``/``std``/
  ``mean``/``logsumexp``/norms need floating point.
* ``var``/``std`` use ``correction`` (Bessel's correction, default 1); the legacy positional
  ``unbiased`` flag maps to correction 1/0.
* ``prod`` and ``cumprod`` gradients are exact in the presence of zeros: with no zero in a
  slice the gradient is ``out / x``; with exactly one zero only that position gets the
  product of the others; with two or more zeros the gradient is zero.

Every op works on raw arrays with array methods / NumPy functions that dispatch to CuPy.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from .. import kernels
from ..autograd import Function, Tensor, _wrap
from ..autograd.dispatch import op, register
from ..autograd.higher_order import first_order_only
from ..backend import as_dtype
from ..backend.fp_errors import enter_quiet, exit_quiet
from ..backend.user_warning import warn_at_caller
from ..kernels import scan as _scan
from . import _grad_graph as _gg
from ._util import as_array, norm_dims, refuse_complex, refuse_complex_runtime, wrap_dim

__all__ = [
    "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "aminmax",
    "var", "std", "var_mean", "std_mean", "logsumexp", "cumsum", "cumprod", "norm",
    "vector_norm", "all", "any", "count_nonzero",
]


# --------------------------------------------------------------------------- return types
class return_types:  # noqa: N801 - PyTorch's name (torch.return_types)
    """Named tuples returned by ops with several outputs (``values, indices = x.max(1)``)."""

    max = namedtuple("max", ["values", "indices"])
    min = namedtuple("min", ["values", "indices"])
    sort = namedtuple("sort", ["values", "indices"])
    topk = namedtuple("topk", ["values", "indices"])
    kthvalue = namedtuple("kthvalue", ["values", "indices"])
    median = namedtuple("median", ["values", "indices"])
    aminmax = namedtuple("aminmax", ["min", "max"])
    cummax = namedtuple("cummax", ["values", "indices"])
    cummin = namedtuple("cummin", ["values", "indices"])
    mode = namedtuple("mode", ["values", "indices"])
    slogdet = namedtuple("slogdet", ["sign", "logabsdet"])
    linalg_slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
    linalg_inv_ex = namedtuple("linalg_inv_ex", ["inverse", "info"])
    linalg_solve_ex = namedtuple("linalg_solve_ex", ["result", "info"])
    frexp = namedtuple("frexp", ["mantissa", "exponent"])
    histogram = namedtuple("histogram", ["hist", "bin_edges"])
    histogramdd = namedtuple("histogramdd", ["hist", "bin_edges"])
    nanmedian = namedtuple("nanmedian", ["values", "indices"])
    qr = namedtuple("qr", ["Q", "R"])
    linalg_qr = namedtuple("linalg_qr", ["Q", "R"])
    linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
    svd = namedtuple("svd", ["U", "S", "V"])
    linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])
    linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
    linalg_cholesky_ex = namedtuple("linalg_cholesky_ex", ["L", "info"])
    triangular_solve = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
    # the LU / eig / Householder / LDL family (linalg_lu.py, linalg_eig.py, linalg_householder.py)
    linalg_lu_factor = namedtuple("linalg_lu_factor", ["LU", "pivots"])
    linalg_lu_factor_ex = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
    _lu_with_info = namedtuple("_lu_with_info", ["LU", "pivots", "info"])
    linalg_lu = namedtuple("linalg_lu", ["P", "L", "U"])
    lu_unpack = namedtuple("lu_unpack", ["P", "L", "U"])
    linalg_eig = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
    geqrf = namedtuple("geqrf", ["a", "tau"])
    linalg_ldl_factor = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
    linalg_ldl_factor_ex = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _return_type_repr(self) -> str:
    """PyTorch's structseq layout, one field per line:
    ``shardflow.return_types.max(\nvalues=tensor(3.),\nindices=tensor(1))``."""
    fields = ",\n".join(f"{k}={v!r}" for k, v in zip(self._fields, self))
    return f"shardflow.return_types.{type(self).__name__}(\n{fields})"


for _cls in (v for k, v in vars(return_types).items() if not k.startswith("_")):
    _cls.__module__ = "shardflow.return_types"
    _cls.__repr__ = _return_type_repr


# --------------------------------------------------------------------------- helpers
def _numel(shape, dims) -> int:
    if dims is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dims)


def _keep(g, shape, dims, keepdim):
    """Reshape a reduced array to the keepdim=True shape (size-1 reduced dims)."""
    if keepdim:
        return g
    if dims is None:
        return g.reshape((1,) * len(shape))
    return np.expand_dims(g, dims)


def _expand_grad(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input ``shape``."""
    if dims is None:
        return np.broadcast_to(g.reshape((1,) * len(shape)), shape) if g.ndim == 0 or len(shape) else g
    if not keepdim:
        g = np.expand_dims(g, dims)
    return np.broadcast_to(g, shape)


def _scatter_grad(g, idx, shape, dim, keepdim):
    """Gradient of ``take_along_axis(x, idx, dim)``: zeros with ``g`` written at ``idx``.

    ``idx`` has the keepdim shape (size ``k`` along ``dim``); ``g`` is the output gradient.
    """
    if not keepdim and g.ndim < len(shape):
        g = np.expand_dims(g, dim)
    out = np.zeros_like(g, shape=shape)
    if len(shape) == 0:
        return as_array(out + g)
    np.put_along_axis(out, idx, g, axis=dim)
    return out


def _require_float(t: Tensor, name: str):
    if not t.dtype.is_floating_point:
        raise RuntimeError(
            f"{name}(): expected a floating point input, got {t.dtype}; call .float() first"
        )


def _shape_of(t) -> tuple:
    return tuple(t.shape)


def _drop_kept(outk, dims, keepdim):
    """A keepdim-shaped reduction result in the op's output shape."""
    if keepdim:
        return outk
    return as_array(outk.reshape(()) if dims is None else outk.squeeze(dims))


# --------------------------------------------------------------------------- sum / mean
_HALF_KINDS = frozenset({np.dtype(np.float16), np.dtype(as_dtype("bfloat16").np)})


def _half(a) -> bool:
    """A float16/bfloat16 array: PyTorch accumulates its sums in float32."""
    return a.dtype in _HALF_KINDS


def _wide_sum(a, dims):
    """``a.sum(dims, keepdims=True)``; float16/bfloat16 accumulated in float32, rounded once."""
    if _half(a):
        return a.astype(np.float32).sum(axis=dims, keepdims=True).astype(a.dtype)
    return a.sum(axis=dims, keepdims=True)


class Sum(Function):
    save_inputs = ()

    def forward(self, a, dims=None, keepdim=False, dtype=None):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        self.cast = a.dtype if dtype is not None and np.dtype(dtype) != a.dtype else None
        if _half(a) and (dtype is None or np.dtype(dtype) == a.dtype):
            # float32 accumulation, one rounding at the end (PyTorch's acc_type)
            wide = a.astype(np.float32)
            return as_array(wide.sum(axis=dims, keepdims=keepdim).astype(a.dtype))
        if type(a) is np.ndarray:  # ndarray.sum's own ufunc call, from here (see backend/fp_errors.py)
            return as_array(np.add.reduce(a, axis=dims, keepdims=keepdim, dtype=dtype))
        return as_array(a.sum(axis=dims, keepdims=keepdim, dtype=dtype))

    def backward(self, g):
        if self.cast is not None:  # sum(x, dtype=...): the gradient in x's dtype, as PyTorch
            g = g.astype(self.cast)
        return _expand_grad(g, self.shape, self.dims, self.keepdim)

    def backward_graph(self, g):
        if self.cast is not None:
            g = g.to(as_dtype(self.cast))
        return _gg.expand_reduced(g, self.shape, self.dims, self.keepdim)


class Mean(Function):
    save_inputs = ()

    def forward(self, a, dims=None, keepdim=False):
        self.shape, self.dims, self.keepdim = a.shape, dims, keepdim
        self.n = _numel(a.shape, dims)
        if self.n == 0:  # NaN, as PyTorch (NumPy's mean would also warn "Mean of empty slice")
            return np.full(np.add.reduce(a, axis=dims, keepdims=keepdim).shape, np.nan, a.dtype)
        token = enter_quiet()  # ndarray.mean is Python: its FP warnings escape the module filter
        try:
            wide = a.astype(np.float32) if _half(a) else a  # float32 accumulation, as Sum
            return as_array(wide.mean(axis=dims, keepdims=keepdim)).astype(a.dtype, copy=False)
        finally:
            exit_quiet(token)

    def backward(self, g):
        return as_array(_expand_grad(g / self.n, self.shape, self.dims, self.keepdim).astype(g.dtype, copy=False))

    def backward_graph(self, g):
        return _gg.expand_reduced(g / self.n, self.shape, self.dims, self.keepdim)


@register("sum")
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum over ``dim`` (all dims when None); ints and bools accumulate as int64."""
    dims = norm_dims(dim, input.array.ndim)
    if dtype is not None:
        dtype = as_dtype(dtype).np
    elif input.array.dtype.kind in "biu":
        dtype = np.int64  # PyTorch sums integers and bools as int64
    return Sum.apply(input, dims=dims, keepdim=keepdim, dtype=dtype)


@register("mean")
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Arithmetic mean over ``dim``; gradient ``g / n`` broadcast back."""
    if dtype is not None:
        input = input.to(dtype)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be floating point, got "
            f"{input.dtype}; call .float() first or pass dtype=shardflow.float32"
        )
    return Mean.apply(input, dims=norm_dims(dim, input.array.ndim), keepdim=keepdim)


# --------------------------------------------------------------------------- prod
def _conj_if_complex(a):
    return a.conjugate() if a.dtype.kind == "c" else a


class Prod(Function):
    save_inputs = (0,)
    save_output = True

    def forward(self, a, dims=None, keepdim=False, dtype=None):
        self.a, self.dims, self.keepdim = a, dims, keepdim
        return as_array(a.prod(axis=dims, keepdims=keepdim, dtype=dtype))

    def backward(self, g):
        # complex: g * conj(d prod / d a); the derivative is a product of the other entries,
        # so its conjugate is the same formula over conj(a)
        a, dims = _conj_if_complex(self.a), self.dims
        gk = _keep(g, a.shape, dims, self.keepdim)
        zero = a == 0
        if not zero.any():
            out = a.prod(axis=dims, keepdims=True)
            return as_array(gk * out / a)
        # Product of the non-zero entries, and the number of zeros, per reduced slice.
        nz = zero.sum(axis=dims, keepdims=True)
        safe = np.where(zero, 1, a)
        p_others = safe.prod(axis=dims, keepdims=True)  # product without the zeros
        grad = np.where(nz == 0, p_others / safe, np.where((nz == 1) & zero, p_others, 0))
        return as_array((gk * grad).astype(a.dtype, copy=False))

    def backward_graph(self, g):
        if (self.a == 0).any():  # the zero-safe formula has no differentiable form here
            return first_order_only(self, g)
        shape, dims, keepdim = self.a.shape, self.dims, self.keepdim
        out = _gg.unreduce(_gg.conj(self.saved_output(0, self._out_array())), shape, dims, keepdim)
        return _gg.unreduce(g, shape, dims, keepdim) * out / _gg.conj(self.saved_input(0))

    def _out_array(self):
        return as_array(self.a.prod(axis=self.dims, keepdims=self.keepdim))


@register("prod")
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Product over ``dim`` (all dims when None); ints/bools give int64. Zero-safe gradient."""
    dims = norm_dims(dim, input.array.ndim)
    if dtype is not None:
        dtype = as_dtype(dtype).np
    elif input.array.dtype.kind in "biu":
        dtype = np.int64
    if dtype is not None and input.requires_grad and np.dtype(dtype) != input.array.dtype:
        # cast first: the cast's backward returns the gradient in input's dtype, as PyTorch
        input, dtype = input.to(as_dtype(dtype)), None
    return Prod.apply(input, dims=dims, keepdim=keepdim, dtype=dtype)


# --------------------------------------------------------------------------- max / min
class _SelectAlongDim(Function):
    """max/min along one dim: values and int64 indices; gradient goes to the index."""

    save_inputs = ()

    def forward(self, a, dim, keepdim, largest):
        self.shape, self.dim, self.keepdim = a.shape, dim, keepdim
        if a.ndim == 0:
            self.idx = np.zeros_like(a, dtype=np.int64)
            return a.copy(), self.idx
        if a.shape[dim] == 0:
            kind = "max" if largest else "min"
            raise IndexError(
                f"{kind}(): Expected reduction dim {dim} to have non-zero size, got shape "
                f"{tuple(a.shape)}"
            )
        idx = (a.argmax if largest else a.argmin)(axis=dim, keepdims=True)
        vals = np.take_along_axis(a, idx, axis=dim)
        self.idx = idx
        if not keepdim:
            vals, idx = vals.squeeze(dim), idx.squeeze(dim)
        return vals, idx.astype(np.int64, copy=False)

    def backward(self, g, _g_indices):
        return _scatter_grad(g, self.idx, self.shape, self.dim, self.keepdim)

    def backward_graph(self, g, _g_indices):
        # linear in g: g spread over the input's shape, times the one-hot mask of the index
        onehot = _scatter_grad(np.ones(_shape_of(g), g.array.dtype), self.idx, self.shape,
                               self.dim, self.keepdim)
        return _gg.expand_reduced(g, self.shape, (self.dim,), self.keepdim) * _gg.const(onehot, g)


class _Extreme(Function):
    """amax/amin (and max()/min() without dim): gradient split evenly among ties."""

    save_inputs = (0,)
    save_output = True

    def forward(self, a, dims, keepdim, largest):
        if a.size == 0 and (dims is None or builtins.any(a.shape[d] == 0 for d in dims)):
            raise IndexError(  # torch's type
                f"{'amax' if largest else 'amin'}(): Expected reduction dim to have non-zero size: cannot "
                f"reduce over a zero-size dimension (input shape {tuple(a.shape)}); give a non-empty input"
            )
        self.a, self.dims, self.keepdim = a, dims, keepdim
        out = a.max(axis=dims, keepdims=True) if largest else a.min(axis=dims, keepdims=True)
        self.outk = out
        if not keepdim:
            out = out.reshape(()) if dims is None else out.squeeze(dims)
        return as_array(out)

    # A NaN result, as PyTorch: max()/min() split the gradient among the NaNs
    # (evenly_distribute_backward); amax/amin give NaN over the slice ((g / 0) * 0 in its
    # scale_grad_by_count). The gradient was 0 there, hiding the NaN from GradScaler's check.
    nan_ties = False

    def backward(self, g):
        a, dims = self.a, self.dims
        nan = self.outk.dtype.kind not in "biu" and bool(np.isnan(self.outk).any())
        mask = np.isnan(a) if nan and self.nan_ties else a == self.outk
        count = mask.sum(axis=dims, keepdims=True)
        gk = _keep(g, a.shape, dims, self.keepdim)
        if nan and not self.nan_ties:
            with np.errstate(divide="ignore", invalid="ignore"):
                return as_array(((gk / count) * mask).astype(g.dtype, copy=False))
        return as_array(np.where(mask, gk / count, 0).astype(g.dtype, copy=False))

    def backward_graph(self, g):
        # linear in g: the tie-split mask is piecewise constant
        a, dims = self.a, self.dims
        mask = a == self.outk
        share = mask / mask.sum(axis=dims, keepdims=True)
        return _gg.expand_reduced(g, a.shape, dims, self.keepdim) * _gg.const(share, g)


# One node class per torch node name (MaxBackward1 / MinBackward1 for max() / min(),
# AmaxBackward0 / AminBackward0): a node's name must outlive backward, which frees what
# forward recorded, so it is the class that tells them apart (node_names.py).
class _MaxAll(_Extreme):
    nan_ties = True


class _MinAll(_Extreme):
    nan_ties = True


class _Amax(_Extreme):
    pass


class _Amin(_Extreme):
    pass


def _max_min(input, dim, keepdim, largest, name):
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}(): keepdim=True needs a dim; pass dim=... or use amax/amin")
        refuse_complex(input, kernel=f"{name}_all")  # complex numbers have no order (torch's)
        return (_MaxAll if largest else _MinAll).apply(input, dims=None, keepdim=False, largest=largest)
    if isinstance(dim, Tensor):  # torch.max(a, b): elementwise
        return op("maximum" if largest else "minimum")(input, dim)
    refuse_complex_runtime(input, f"{name}(): does not support complex input")
    d = wrap_dim(int(dim), input.array.ndim)
    vals, idx = _SelectAlongDim.apply(input, dim=d, keepdim=keepdim, largest=largest)
    return getattr(return_types, name)(vals, idx)


@register("max")
def max(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """``max(x)`` -> the largest value; ``max(x, dim)`` -> ``(values, indices)`` along ``dim``;
    ``max(x, other)`` -> elementwise ``maximum``."""
    if other is not None:  # max(x, other=y): torch's keyword form of the elementwise overload
        if dim is not None or keepdim:
            raise TypeError("max() takes other= alone, not with dim/keepdim")
        dim = other
    return _max_min(input, dim, keepdim, True, "max")


@register("min")
def min(input: Tensor, dim=None, keepdim: bool = False, *, other=None):
    """``min(x)`` -> the smallest value; ``min(x, dim)`` -> ``(values, indices)`` along ``dim``;
    ``min(x, other)`` -> elementwise ``minimum``."""
    if other is not None:  # min(x, other=y): torch's keyword form of the elementwise overload
        if dim is not None or keepdim:
            raise TypeError("min() takes other= alone, not with dim/keepdim")
        dim = other
    return _max_min(input, dim, keepdim, False, "min")


@register("amax")
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Largest value over ``dim`` (all dims for ``()``/None); ties share the gradient."""
    refuse_complex(input, kernel="max_values_cpu")
    return _Amax.apply(input, dims=norm_dims(dim, input.array.ndim), keepdim=keepdim, largest=True)


@register("amin")
def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Smallest value over ``dim`` (all dims for ``()``/None); ties share the gradient."""
    refuse_complex(input, kernel="min_values_cpu")
    return _Amin.apply(input, dims=norm_dims(dim, input.array.ndim), keepdim=keepdim, largest=False)


@register("aminmax")
def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """``(min, max)`` over ``dim`` (all dims when None)."""
    refuse_complex(input, kernel="aminmax_cpu")
    return return_types.aminmax(amin(input, dim, keepdim), amax(input, dim, keepdim))


def _arg_extreme(input: Tensor, dim, keepdim, largest):
    a = input.array
    f = a.argmax if largest else a.argmin
    name = "argmax" if largest else "argmin"
    refuse_complex_runtime(input, f"{name}(): does not support complex input")
    if a.size == 0 and (dim is None or a.ndim and a.shape[wrap_dim(int(dim), a.ndim)] == 0):
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
                         if dim is None else f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    if dim is None:
        idx = as_array(f()).astype(np.int64)
        return _wrap(idx.reshape((1,) * a.ndim) if keepdim else idx)
    d = wrap_dim(int(dim), a.ndim)
    if a.ndim == 0:
        return _wrap(np.zeros_like(a, dtype=np.int64))
    return _wrap(as_array(f(axis=d, keepdims=keepdim)).astype(np.int64, copy=False))


@register("argmax")
def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (of the flattened input when ``dim`` is None); int64."""
    return _arg_extreme(input, dim, keepdim, True)


@register("argmin")
def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (of the flattened input when ``dim`` is None); int64."""
    return _arg_extreme(input, dim, keepdim, False)


# --------------------------------------------------------------------------- var / std
class Var(Function):
    """var = sum((x - mean)^2) / (N - correction); grad = 2 (x - mean) / (N - correction)."""

    save_inputs = ()

    def forward(self, a, dims, correction, keepdim, take_sqrt):
        n = _numel(a.shape, dims)
        self.denom = builtins.max(n - correction, 0)
        token = enter_quiet()  # ndarray.mean/.sum are Python: see backend/fp_errors.py
        try:
            if n == 0:  # NaN (NumPy's mean would warn "Mean of empty slice")
                d = a
                out = np.full(np.add.reduce(a, axis=dims, keepdims=True).shape, np.nan, a.dtype)
            elif _half(a):
                # float32 throughout, one rounding of the result (PyTorch's acc_type); the
                # centred values kept for backward are in a's dtype, as its var_backward's
                wide = a.astype(np.float32)
                mean = wide.mean(axis=dims, keepdims=True)
                dw = wide - mean
                v = (dw * dw).sum(axis=dims, keepdims=True) / np.float32(self.denom)
                out = (np.sqrt(v) if take_sqrt else v).astype(a.dtype)
                d = a - mean.astype(a.dtype)
            elif a.dtype == np.float32:
                # PyTorch's CPU var/std accumulate in double: Welford's along a dim (the exact
                # mean, in effect), and for a one-element result two passes around the float32
                # mean (std_var_all_cpu), whose rounding shows where the values are far from 0
                # compared with their spread. Both here on a float64 copy (rounding x - mean
                # to float32 first was 1 ulp off torch in a fifth of the cases; the float32
                # sums in half); still faster than torch's kernel on 1M elements. The centred
                # values kept for backward are float32, as its var_backward's.
                whole = a.size == n  # a one-element result
                wide = a.astype(np.float64)
                mean = a.mean(axis=dims, keepdims=True, dtype=np.float32) if whole else wide.mean(axis=dims, keepdims=True)
                wide -= mean
                np.square(wide, out=wide)
                v = np.add.reduce(wide, axis=dims, keepdims=True) / self.denom
                out = (np.sqrt(v) if take_sqrt else v).astype(np.float32)
                d = a - mean.astype(np.float32)
            else:
                d = a - a.mean(axis=dims, keepdims=True, dtype=a.dtype)
                v = (d * d).sum(axis=dims, keepdims=True) / a.dtype.type(self.denom)
                out = np.sqrt(v) if take_sqrt else v
        finally:
            exit_quiet(token)
        self.d, self.dims, self.keepdim, self.take_sqrt, self.outk = d, dims, keepdim, take_sqrt, out
        if not keepdim:
            out = out.reshape(()) if dims is None else out.squeeze(dims)
        return as_array(out).astype(a.dtype, copy=False)

    def backward(self, g):
        gk = _keep(g, self.d.shape, self.dims, self.keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            if _half(self.d):
                # PyTorch's var_backward / std_backward op by op, each op computed in float32
                # and rounded to the 2-byte dtype, the scalar 2 / dof a float32 (NumPy alone
                # would round it to float16 first, or widen bfloat16 * float to float32)
                dt, f32 = g.dtype, np.float32
                if self.take_sqrt:  # std: var_backward(grad / (2 std)), 0 where std == 0
                    q = (gk.astype(f32) / (self.outk.astype(f32) * 2)).astype(dt)
                    gk = np.where(self.outk == 0, np.zeros((), dt), q)
                scaled = (gk.astype(f32) * f32(2.0 / self.denom)).astype(dt)
                return as_array((scaled.astype(f32) * self.d.astype(f32)).astype(dt))
            if self.take_sqrt:  # d std = d var / (2 std); 0 where std == 0, as PyTorch's std_backward
                scale = gk / (self.outk * self.d.dtype.type(self.denom))
                if not self.outk.all():  # (a constant slice: 0 * inf was NaN)
                    scale = np.where(self.outk == 0, np.zeros((), scale.dtype), scale)
            else:
                scale = gk * (2.0 / self.d.dtype.type(self.denom))
            return as_array((self.d * scale).astype(g.dtype, copy=False))

    def backward_graph(self, g):
        # Var keeps x - mean(x), not x. A Tensor with that value and x's history, centred
        # again, is x - mean(x) in value (up to rounding) and in derivative (the same linear
        # map of x): the graph needs nothing else of x.
        shape, dims, keepdim = self.d.shape, self.dims, self.keepdim
        x = self.saved_input(0, self.d)
        d = x - x.mean(dim=dims, keepdim=True)
        gk = _gg.unreduce(g, shape, dims, keepdim)
        if self.take_sqrt:
            std = _gg.unreduce(self.saved_output(0, self._out_array()), shape, dims, keepdim)
            scale = gk / (std * float(self.denom))
            if not self.outk.all():  # 0 where std == 0, as the first-order backward
                scale = _gg.keep_where(scale, np.broadcast_to(self.outk != 0, shape))
            return d * scale
        return d * (gk * (2.0 / self.denom))

    def _out_array(self):
        out = self.outk
        if not self.keepdim:
            out = out.reshape(()) if self.dims is None else out.squeeze(self.dims)
        return as_array(out).astype(self.d.dtype, copy=False)


def _var_args(input, dim, unbiased, correction, name):
    _require_float(input, name)
    if isinstance(dim, bool):  # var(x, unbiased)
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise RuntimeError(f"{name}(): pass either correction or unbiased, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = norm_dims(dim, input.array.ndim)
    if _numel(input.array.shape, dims) - correction <= 0:  # PyTorch's warning; the result is NaN or inf
        warn_at_caller(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                       "than the reduction factor (input numel divided by output numel).")
    return dims, correction


def _complex_var(input, dim, unbiased, keepdim, correction, take_sqrt):
    """Variance of a complex tensor, real-valued as in torch: ``sum |x - mean|^2 / (n - c)``,
    which is the variance of the real part plus that of the imaginary part."""
    kw = {"keepdim": keepdim, "correction": correction}
    v = var(input.real, dim, unbiased, **kw) + var(input.imag, dim, unbiased, **kw)
    return v.sqrt() if take_sqrt else v


@register("var")
def var(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Variance over ``dim`` with ``correction`` (default 1: unbiased)."""
    if input.is_complex():
        return _complex_var(input, dim, unbiased, keepdim, correction, False)
    dims, c = _var_args(input, dim, unbiased, correction, "var")
    return Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=False)


@register("std")
def std(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Standard deviation over ``dim`` with ``correction`` (default 1: unbiased)."""
    if input.is_complex():
        return _complex_var(input, dim, unbiased, keepdim, correction, True)
    dims, c = _var_args(input, dim, unbiased, correction, "std")
    return Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=True)


@register("var_mean")
def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` over ``dim``."""
    if input.is_complex():
        return (_complex_var(input, dim, unbiased, keepdim, correction, False),
                mean(input, dim, keepdim))
    dims, c = _var_args(input, dim, unbiased, correction, "var_mean")
    v = Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=False)
    return v, Mean.apply(input, dims=dims, keepdim=keepdim)


@register("std_mean")
def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` over ``dim``."""
    if input.is_complex():
        return (_complex_var(input, dim, unbiased, keepdim, correction, True),
                mean(input, dim, keepdim))
    dims, c = _var_args(input, dim, unbiased, correction, "std_mean")
    s = Var.apply(input, dims=dims, correction=c, keepdim=keepdim, take_sqrt=True)
    return s, Mean.apply(input, dims=dims, keepdim=keepdim)


# --------------------------------------------------------------------------- logsumexp
class LogSumExp(Function):
    """out = m + log(sum(exp(x - m))) with m = max(x) (finite); grad = g * exp(x - out)."""

    save_inputs = (0,)
    save_output = True

    def forward(self, a, dims, keepdim):
        if a.size == 0:  # an empty reduction: log(0) = -inf, as PyTorch
            m = np.zeros(np.add.reduce(a, axis=dims, keepdims=True).shape, a.dtype)
        else:
            m = a.max(axis=dims, keepdims=True)
            m = np.where(np.isfinite(m), m, 0).astype(a.dtype, copy=False)
        with np.errstate(divide="ignore"):
            out = np.log(_wide_sum(np.exp(a - m), dims)) + m
        self.a, self.dims, self.keepdim, self.outk = a, dims, keepdim, out
        if not keepdim:
            out = out.reshape(()) if dims is None else out.squeeze(dims)
        return as_array(out)

    def backward(self, g):
        gk = _keep(g, self.a.shape, self.dims, self.keepdim)
        return as_array(gk * np.exp(self.a - self.outk))

    def backward_graph(self, g):
        shape, dims, keepdim = self.a.shape, self.dims, self.keepdim
        out = _gg.unreduce(self.saved_output(0, _drop_kept(self.outk, dims, keepdim)),
                           shape, dims, keepdim)
        return _gg.unreduce(g, shape, dims, keepdim) * (self.saved_input(0) - out).exp()


@register("logsumexp")
def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x), dim))`` computed stably (max subtracted first); ints -> float."""
    if not input.dtype.is_floating_point:
        input = input.float()
    if input.array.size == 0 and dim is None:
        raise RuntimeError("logsumexp(): cannot reduce an empty tensor over all dims")
    return LogSumExp.apply(input, dims=norm_dims(dim, input.array.ndim), keepdim=keepdim)


# --------------------------------------------------------------------------- cumsum / cumprod
def _cumsum(a, dim, dtype=None):
    """``a.cumsum(dim)``; float16/bfloat16 accumulated in float32, each prefix rounded once.
    float32/float64 run the scan kernel when the kernels are on (``kernels/scan.py``: the
    same running sums, 3-4x faster)."""
    if _half(a) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a.astype(np.float32).cumsum(axis=dim).astype(a.dtype)
    if _scan_kernel(a, dim, dtype):
        return _scan.cumsum(np.ascontiguousarray(a), dim)
    return a.cumsum(axis=dim, dtype=dtype)


def _scan_kernel(a, dim, dtype) -> bool:
    """The scan kernel takes a NumPy float32/float64 array (copied contiguous: a broadcast
    upstream gradient too) with elements along ``dim``, kept in its dtype."""
    return (type(a) is np.ndarray and a.dtype in (np.float32, np.float64) and a.size
            and (dtype is None or np.dtype(dtype) == a.dtype) and kernels.enabled())


def _rev_cumsum(g, dim):
    if _scan_kernel(g, dim, None):
        return _scan.cumsum(np.ascontiguousarray(g), dim, reverse=True)
    return np.flip(_cumsum(np.flip(g, dim), dim), dim)


class CumSum(Function):
    save_inputs = ()

    def forward(self, a, dim, dtype):
        self.dim = dim
        if a.ndim == 0:
            return a.astype(dtype) if dtype is not None else a.copy()
        return _cumsum(a, dim, dtype)

    def backward(self, g):
        return g if g.ndim == 0 else _rev_cumsum(g, self.dim)

    def backward_graph(self, g):
        return g if g.ndim == 0 else g.flip(self.dim).cumsum(self.dim).flip(self.dim)


@register("cumsum")
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative sum along ``dim``; ints/bools accumulate as int64. Grad: reversed cumsum."""
    d = wrap_dim(int(dim), input.array.ndim)
    if dtype is not None:
        dtype = as_dtype(dtype).np
    elif input.array.dtype.kind in "biu":
        dtype = np.int64
    if dtype is not None and input.requires_grad and np.dtype(dtype) != input.array.dtype:
        # cast first: the cast's backward returns the gradient in input's dtype, as PyTorch
        input, dtype = input.to(as_dtype(dtype)), None
    return CumSum.apply(input, dim=d, dtype=dtype)


class CumProd(Function):
    """Gradient: ``revcumsum(g * out) / x`` before a slice's first zero; at the first zero
    ``revcumsum(g * cumprod(x with that zero set to 1))``; zero after it."""

    save_inputs = (0,)
    save_output = True

    def forward(self, a, dim, dtype):
        self.a, self.dim = a, dim
        if a.ndim == 0:
            self.out = a.astype(dtype) if dtype is not None else a.copy()
            return self.out
        if _half(a) and (dtype is None or np.dtype(dtype) == a.dtype):
            # float32 running product, each prefix rounded once (PyTorch's cumprod keeps its
            # accumulate type, as its cumsum)
            self.out = as_array(a.astype(np.float32).cumprod(axis=dim).astype(a.dtype))
        else:
            self.out = a.cumprod(axis=dim, dtype=dtype)
        return self.out

    def backward(self, g):
        # complex: the conjugate derivative, i.e. the same formula over conj(a) (as Prod)
        a, out, dim = _conj_if_complex(self.a), _conj_if_complex(self.out), self.dim
        if a.ndim == 0:
            return g
        zero = a == 0
        if not zero.any():
            return _rev_cumsum(g * out, dim) / a
        nzeros_before = zero.cumsum(axis=dim)  # zeros in x[..:i] inclusive
        before = nzeros_before == 0  # strictly before the first zero
        first = zero & (nzeros_before == 1)
        safe = np.where(before, a, 1)
        grad = np.where(before, _rev_cumsum(g * out, dim) / safe, 0)
        cp = np.where(first, 1, a).cumprod(axis=dim)
        at_first = _rev_cumsum(g * cp, dim)
        return np.where(first, at_first, grad).astype(g.dtype, copy=False)

    def backward_graph(self, g):
        a, dim = self.a, self.dim
        if a.ndim == 0:
            return g
        if (a == 0).any():  # the zero-safe formula has no differentiable form here
            return first_order_only(self, g)
        out = _gg.conj(self.saved_output(0, self.out))
        return (g * out).flip(dim).cumsum(dim).flip(dim) / _gg.conj(self.saved_input(0))


@register("cumprod")
def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Cumulative product along ``dim`` (zero-safe gradient); ints/bools give int64."""
    d = wrap_dim(int(dim), input.array.ndim)
    if dtype is not None:
        dtype = as_dtype(dtype).np
    elif input.array.dtype.kind in "biu":
        dtype = np.int64
    if dtype is not None and input.requires_grad and np.dtype(dtype) != input.array.dtype:
        # cast first: the cast's backward returns the gradient in input's dtype, as PyTorch
        input, dtype = input.to(as_dtype(dtype)), None
    return CumProd.apply(input, dim=d, dtype=dtype)


# --------------------------------------------------------------------------- norms
class VectorNorm(Function):
    """p-norm ``(sum |x|^p)^(1/p)`` over ``dims``; p in {2, 1, inf, -inf, 0, other}."""

    save_inputs = (0,)
    save_output = True

    def forward(self, a, ord, dims, keepdim):
        self.a, self.ord, self.dims, self.keepdim = a, ord, dims, keepdim
        # float16/bfloat16: PyTorch's norm kernels upcast each element and accumulate in
        # float32, rounding once at the end; NumPy would round every square and partial sum
        # (a bfloat16 Frobenius norm of 4096 small numbers came out 34% low)
        w = a.astype(np.float32) if _half(a) else a
        if ord == 2:
            out = np.sqrt((w * w).sum(axis=dims, keepdims=True))
        elif ord == 1:
            out = np.abs(w).sum(axis=dims, keepdims=True)
        elif ord == math.inf:
            out = np.abs(w).max(axis=dims, keepdims=True)
        elif ord == -math.inf:
            out = np.abs(w).min(axis=dims, keepdims=True)
        elif ord == 0:
            out = (w != 0).sum(axis=dims, keepdims=True).astype(w.dtype)
        else:
            out = (np.abs(w) ** ord).sum(axis=dims, keepdims=True) ** (1.0 / ord)
        out = out.astype(a.dtype, copy=False)
        self.outk = out
        if not keepdim:
            out = out.reshape(()) if dims is None else out.squeeze(dims)
        return as_array(out)

    def backward(self, g):
        a, p, out = self.a, self.ord, self.outk
        gk = _keep(g, a.shape, self.dims, self.keepdim)
        if p == 0:
            return np.zeros_like(a)
        if p == 1:
            return as_array(gk * np.sign(a))
        if p in (math.inf, -math.inf):
            mask = np.abs(a) == out
            count = mask.sum(axis=self.dims, keepdims=True)
            return as_array((np.sign(a) * np.where(mask, gk / count, 0)).astype(g.dtype, copy=False))
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == 2:  # torch's grad * (self / norm): the order matters in 2-byte dtypes
                grad = gk * (a / out)
            else:  # (the exponent in a's dtype: a Python float made a bfloat16 power float64)
                pm1 = a.dtype.type(p - 1)
                grad = np.sign(a) * np.abs(a) ** pm1 * (gk / out ** pm1)
        return as_array(np.where(out == 0, 0, grad).astype(g.dtype, copy=False))

    def backward_graph(self, g):
        a, p, dims, keepdim = self.a, self.ord, self.dims, self.keepdim
        gk = _gg.unreduce(g, a.shape, dims, keepdim)
        sign = _gg.const(np.sign(a), g)
        if p == 0:
            return _gg.expand_reduced(g, a.shape, dims, keepdim) * 0.0
        if p == 1:
            return gk * sign
        if p in (math.inf, -math.inf):
            mask = np.abs(a) == self.outk
            return gk * _gg.const(np.sign(a) * (mask / mask.sum(axis=dims, keepdims=True)), g)
        x = self.saved_input(0)
        out = _gg.unreduce(self.saved_output(0, _drop_kept(self.outk, dims, keepdim)),
                           a.shape, dims, keepdim)
        grad = gk * (x / out) if p == 2 else sign * x.abs() ** (p - 1) * (gk / out ** (p - 1))  # (backward's order)
        if (self.outk == 0).any():
            grad = _gg.op("where")(_wrap(np.broadcast_to(self.outk == 0, a.shape)), 0.0, grad)
        return grad


@register("linalg_vector_norm", "vector_norm")
def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``torch.linalg.vector_norm``: the ``ord``-norm of ``x`` viewed as a vector over ``dim``."""
    if dtype is not None:
        x = x.to(dtype)
    if x.dtype.is_complex:  # the norm of the moduli, real-valued (torch's)
        x = x.abs()
    if not x.dtype.is_floating_point:
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point tensor as input. Got {x.dtype}; "
            "call .float() first"
        )
    ord = float(ord)
    return VectorNorm.apply(x, ord=ord, dims=norm_dims(dim, x.array.ndim), keepdim=keepdim)


class Dist(VectorNorm):
    """``torch.dist``'s node: the ``ord``-norm of ``input - other`` over every element (a
    VectorNorm of the difference), named as torch names it (``DistBackward0``; a printed
    ``torch.dist(...)`` shows ``grad_fn=<DistBackward0>``)."""


def dist_norm(diff: Tensor, p) -> Tensor:
    """The norm ``torch.dist`` returns, of ``diff = input - other``, through :class:`Dist`;
    of the moduli for a complex ``diff`` (real-valued, as torch)."""
    if diff.dtype.is_complex:
        diff = diff.abs()
    if not diff.dtype.is_floating_point:
        raise RuntimeError(f"dist(): Expected a floating point tensor as input. Got {diff.dtype}; call .float() first")
    return Dist.apply(diff, ord=float(p), dims=norm_dims(None, diff.array.ndim), keepdim=False)


@register("norm")
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """``torch.norm``: 'fro' (= 2-norm of the flattened dims), 'nuc' (the nuclear norm of the
    matrices over ``dim``, the last two by default) or a numeric ``p`` vector norm."""
    if isinstance(p, str):
        if p == "nuc":
            from ._linalg_names import matrix_norm  # (that module builds on this one)

            if dim is not None and len(tuple(dim) if isinstance(dim, tuple | list) else (dim,)) != 2:
                raise RuntimeError(f"norm(p='nuc'): dim must be a 2-tuple of the matrix dims, got {dim}")
            return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype)
        if p != "fro":
            raise RuntimeError(f"norm(): p={p!r} is not a norm; use 'fro', 'nuc' or a number")
        p = 2
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


# --------------------------------------------------------------------------- logical
@register("all")
def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """True where every element over ``dim`` is non-zero (bool result; uint8 for uint8, as torch)."""
    out = as_array(input.array.all(axis=norm_dims(dim, input.array.ndim), keepdims=keepdim))
    return _wrap(out.astype(np.uint8) if input.array.dtype == np.uint8 else out)  # torch: uint8 stays uint8


@register("any")
def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """True where some element over ``dim`` is non-zero (bool result; uint8 for uint8, as torch)."""
    out = as_array(input.array.any(axis=norm_dims(dim, input.array.ndim), keepdims=keepdim))
    return _wrap(out.astype(np.uint8) if input.array.dtype == np.uint8 else out)  # torch: uint8 stays uint8


@register("count_nonzero")
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """Number of non-zero elements over ``dim`` (all dims when None), as int64."""
    a = input.array
    return _wrap(as_array((a != 0).sum(axis=norm_dims(dim, a.ndim), dtype=np.int64)))
