"""``torch.masked.MaskedTensor``: a dense tensor paired with a boolean mask of the elements
that are specified (mask True) — the others are "masked out" and shown as ``--``.

A ``MaskedTensor`` here holds two shardflow tensors (``get_data()``, ``get_mask()``, same shape)
and is not a ``Tensor`` subclass: shardflow's ops do not consult ``__torch_function__``, so
``torch.exp(mt)`` does not reach it; use the methods and operators, which follow PyTorch's:

* reductions ``sum``/``mean``/``amax``/``amin``/``argmax``/``argmin``/``prod``/``var``/``std``/
  ``all`` run ``torch.masked``'s reduction on the masked-in elements; the result is a MaskedTensor whose
  mask is ``mask.any`` over the reduced dims (so a fully masked-out slice stays masked out);
  ``softmax(dim)`` keeps the mask;
* binary operators and methods (``+ - * / // % **``, comparisons, ``maximum``, ``minimum``,
  ``logaddexp``, ``atan2`` ...) need the same mask on both MaskedTensor operands (PyTorch's
  ``ValueError`` otherwise); a Tensor or a number on the other side is used as is (a number on
  the left works for ``+ * /`` and, as in PyTorch, not for ``-``; a Tensor on the left does not:
  shardflow's Tensor operators refuse a MaskedTensor);
* unary methods (``exp``, ``log``, ``abs``, ``sin`` ..., ``-mt``) apply to the data and keep the mask;
* autograd: ``masked_tensor(data, mask, requires_grad=True)`` makes a leaf; ``backward()`` on a
  one-element result fills ``grad`` (a MaskedTensor with the leaf's mask), as PyTorch's.

* indexing and the shape methods torch passes through (``mt[0]``, ``view``, ``reshape``,
  ``transpose``, ``t``, ``expand``, ``unsqueeze``, ``split``, ``flatten`` ...) apply to data and
  mask alike; like torch's, ``permute`` / ``squeeze`` / ``.T`` are not there.

Not here: sparse layouts, in-place ops and the ``torch.*`` functions taking a MaskedTensor
(docs/COMPAT.md).
"""

from __future__ import annotations

import operator

from ... import ops
from ...autograd import Tensor
from ...backend import dtypes
from .. import _ops

__all__ = ["MaskedTensor", "masked_tensor", "as_masked_tensor", "is_masked_tensor"]

_SUPPORTED_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.bool_, dtypes.int8,
                     dtypes.int16, dtypes.int32, dtypes.int64)


def is_masked_tensor(obj, /) -> bool:
    """True if ``obj`` is a MaskedTensor."""
    return isinstance(obj, MaskedTensor)


def _multidim_any(mask: Tensor, dim, keepdim: bool) -> Tensor:
    """mask.any over every dim in ``dim`` (an int or a sequence)."""
    dims = (dim,) if isinstance(dim, int) else dim
    for d in sorted((d % max(mask.ndim, 1) for d in dims), reverse=True):
        mask = mask.any(d, keepdim=keepdim)
    return mask


class MaskedTensor:
    """``MaskedTensor(data, mask, requires_grad=False)``: see the module docstring."""

    _is_shardflow_masked_tensor = True

    def __init__(self, data, mask, requires_grad: bool = False):
        if is_masked_tensor(data) or not isinstance(data, Tensor):
            raise TypeError("data must be a Tensor")
        if is_masked_tensor(mask) or not isinstance(mask, Tensor):
            raise TypeError("mask must be a Tensor")
        if mask.dtype != dtypes.bool_:
            raise TypeError("mask must have dtype bool.")
        if data.dtype not in _SUPPORTED_DTYPES:
            raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
        if data.dim() != mask.dim():
            raise ValueError("data.dim() must equal mask.dim()")
        if tuple(data.shape) != tuple(mask.shape):
            raise ValueError("data.size() must equal mask.size()")
        if requires_grad:
            data = data.detach().clone().requires_grad_(True)
        self._masked_data = data
        self._masked_mask = mask

    # ---- accessors
    def get_data(self) -> Tensor:
        return self._masked_data

    def get_mask(self) -> Tensor:
        return self._masked_mask

    def to_tensor(self, value) -> Tensor:
        """The data with masked-out elements replaced by ``value``."""
        return self._masked_data.masked_fill(~self._masked_mask, value)

    def is_sparse_coo(self) -> bool:
        return False

    def is_sparse_csr(self) -> bool:
        return False

    is_sparse = False

    @property
    def shape(self):
        return self._masked_data.shape

    def size(self, dim=None):
        return self._masked_data.size() if dim is None else self._masked_data.size(dim)

    @property
    def dtype(self):
        return self._masked_data.dtype

    @property
    def device(self):
        return self._masked_data.device

    @property
    def ndim(self) -> int:
        return self._masked_data.ndim

    def dim(self) -> int:
        return self._masked_data.dim()

    def numel(self) -> int:
        return self._masked_data.numel()

    def __len__(self) -> int:
        return len(self._masked_data)

    # ---- autograd
    @property
    def requires_grad(self) -> bool:
        return self._masked_data.requires_grad

    @property
    def grad(self):
        g = self._masked_data.grad
        return None if g is None else MaskedTensor(g, self._masked_mask)

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        if is_masked_tensor(gradient):
            gradient = gradient.get_data()
        self._masked_data.backward(gradient, retain_graph=retain_graph, create_graph=create_graph)

    def detach(self) -> MaskedTensor:
        return MaskedTensor(self._masked_data.detach(), self._masked_mask)

    def clone(self) -> MaskedTensor:
        return MaskedTensor(self._masked_data.clone(), self._masked_mask.clone())

    def to(self, *args, **kwargs) -> MaskedTensor:
        """``to(dtype)`` / ``to(device)``: the data converted, the mask moved along."""
        data = self._masked_data.to(*args, **kwargs)
        return MaskedTensor(data, self._masked_mask.to(data.device))

    def float(self) -> MaskedTensor:
        return self.to(dtypes.float32)

    def double(self) -> MaskedTensor:
        return self.to(dtypes.float64)

    # ---- reductions (PyTorch's maskedtensor/reductions.py)
    def _reduce(self, name, dim, keepdim, dtype, **kwargs) -> MaskedTensor:
        fn = getattr(_ops, name)
        if dim is None:
            return MaskedTensor(fn(self, **kwargs), self._masked_mask.any())
        data = fn(self, dim=dim, keepdim=keepdim, dtype=dtype, **kwargs)
        return MaskedTensor(data, _multidim_any(self._masked_mask, dim, keepdim))

    def sum(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("sum", dim, keepdim, dtype)

    def mean(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("mean", dim, keepdim, dtype)

    def amax(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("amax", dim, keepdim, dtype)

    def amin(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("amin", dim, keepdim, dtype)

    def argmax(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("argmax", dim, keepdim, dtype)

    def argmin(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("argmin", dim, keepdim, dtype)

    def prod(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("prod", dim, keepdim, dtype)

    def var(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("var", dim, keepdim, dtype)

    def std(self, dim=None, keepdim=False, dtype=None) -> MaskedTensor:
        return self._reduce("std", dim, keepdim, dtype)

    def all(self, dim=None, keepdim=False) -> MaskedTensor:
        """Whether every masked-in element is true (masked-out ones count as True)."""
        filled = self._masked_data.masked_fill(~self._masked_mask, True)
        if dim is None:
            return MaskedTensor(filled.all(), self._masked_mask.any())
        return MaskedTensor(filled.all(dim, keepdim=keepdim),
                            _multidim_any(self._masked_mask, dim, keepdim))

    def softmax(self, dim) -> MaskedTensor:
        return MaskedTensor(_ops.softmax(self, dim), self._masked_mask)

    # ---- elementwise
    def _binary(self, fn, other, reverse=False) -> MaskedTensor:
        if is_masked_tensor(other):
            if not ops.equal(self._masked_mask, other._masked_mask):
                raise ValueError("Input masks must match. If you need support for this, please "
                                 "open an issue on Github.")
            other = other._masked_data
        a, b = (other, self._masked_data) if reverse else (self._masked_data, other)
        return MaskedTensor(fn(a, b), self._masked_mask)

    def __add__(self, other):
        return self._binary(operator.add, other)

    def __radd__(self, other):
        return self._binary(operator.add, other, reverse=True)

    def __sub__(self, other):
        return self._binary(operator.sub, other)

    def __mul__(self, other):
        return self._binary(operator.mul, other)

    def __rmul__(self, other):
        return self._binary(operator.mul, other, reverse=True)

    def __truediv__(self, other):
        return self._binary(operator.truediv, other)

    def __rtruediv__(self, other):
        return self._binary(operator.truediv, other, reverse=True)

    def __floordiv__(self, other):
        return self._binary(operator.floordiv, other)

    def __mod__(self, other):
        return self._binary(operator.mod, other)

    def __pow__(self, other):
        return self._binary(operator.pow, other)

    def __eq__(self, other):  # noqa: D105 - elementwise, as PyTorch's
        return self._binary(operator.eq, other)

    def __ne__(self, other):
        return self._binary(operator.ne, other)

    def __lt__(self, other):
        return self._binary(operator.lt, other)

    def __le__(self, other):
        return self._binary(operator.le, other)

    def __gt__(self, other):
        return self._binary(operator.gt, other)

    def __ge__(self, other):
        return self._binary(operator.ge, other)

    __hash__ = object.__hash__

    def __and__(self, other):
        return self._binary(operator.and_, other)

    def __or__(self, other):
        return self._binary(operator.or_, other)

    def __xor__(self, other):
        return self._binary(operator.xor, other)

    def __neg__(self):
        return self._unary(operator.neg)

    def __abs__(self):
        return self._unary(operator.abs)

    def __invert__(self):
        return self._unary(operator.invert)

    def _unary(self, fn) -> MaskedTensor:
        return MaskedTensor(fn(self._masked_data), self._masked_mask)

    def __repr__(self) -> str:
        return _masked_tensor_str(self)

    # ---- shape and indexing: the same op on the data and on the mask (torch's passthrough)
    def _passthrough(self, name, *args, **kwargs):
        data = getattr(self._masked_data, name)(*args, **kwargs)
        mask = getattr(self._masked_mask, name)(*args, **kwargs)
        if isinstance(data, (tuple, list)):
            return tuple(MaskedTensor(d, m) for d, m in zip(data, mask))
        return MaskedTensor(data, mask)

    def __getitem__(self, index):
        if is_masked_tensor(index):
            raise TypeError("MaskedTensor: index with a Tensor, not a MaskedTensor")
        return self._passthrough("__getitem__", index)


# binary methods by PyTorch's names (maskedtensor/binary.py)
_BINARY = ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
           "floor_divide", "fmod", "remainder", "atan2", "arctan2", "logaddexp", "logaddexp2",
           "maximum", "minimum", "fmax", "fmin", "eq", "ne", "not_equal", "lt", "less", "le",
           "less_equal", "gt", "greater", "ge", "greater_equal", "bitwise_and", "bitwise_or",
           "bitwise_xor", "pow", "nextafter")
# unary methods by PyTorch's names (maskedtensor/unary.py), those shardflow's ops have
_UNARY = ("abs", "absolute", "acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh",
          "arcsinh", "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil", "cos", "cosh",
          "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "fix", "floor",
          "frac", "lgamma", "log", "log10", "log1p", "log2", "logit", "i0", "isnan", "nan_to_num",
          "neg", "negative", "positive", "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid",
          "sign", "sgn", "signbit", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
          "relu")


def _binary_method(name):
    fn = getattr(ops, name)

    def method(self, other):
        return self._binary(fn, other)

    method.__name__ = name
    method.__doc__ = f"Elementwise ``{name}`` on the data; both masks must match."
    return method


def _unary_method(name):
    fn = getattr(ops, name)

    def method(self):
        return self._unary(fn)

    method.__name__ = name
    method.__doc__ = f"Elementwise ``{name}`` on the data; the mask is kept."
    return method


for _name in _BINARY:
    if hasattr(ops, _name):
        setattr(MaskedTensor, _name, _binary_method(_name))
for _name in _UNARY:
    if hasattr(ops, _name):
        setattr(MaskedTensor, _name, _unary_method(_name))
del _name


# methods applied to data and mask alike (PyTorch's maskedtensor/passthrough.py and the
# aten ops its Tensor methods decompose to)
_PASSTHROUGH = ("select", "transpose", "t", "view", "reshape", "expand", "unsqueeze", "split",
                "chunk", "flatten", "unfold", "narrow", "contiguous")


def _passthrough_method(name):
    def method(self, *args, **kwargs):
        return self._passthrough(name, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"``{name}`` of the data and of the mask alike."
    return method


for _name in _PASSTHROUGH:
    setattr(MaskedTensor, _name, _passthrough_method(_name))
del _name


def masked_tensor(data, mask, requires_grad: bool = False) -> MaskedTensor:
    """A MaskedTensor of a copy of ``data`` (a leaf: ``requires_grad`` makes it one)."""
    if is_masked_tensor(data) or not isinstance(data, Tensor):
        raise TypeError("data must be a Tensor")
    data = data.detach().clone()
    return MaskedTensor(data, mask.clone() if isinstance(mask, Tensor) else mask,
                        requires_grad=requires_grad)


def as_masked_tensor(data, mask) -> MaskedTensor:
    """A MaskedTensor over ``data`` itself: gradients flow back to ``data``."""
    return MaskedTensor(data, mask)


def _format_item(value) -> str:
    return f"{value:8.4f}" if isinstance(value, float) else str(value)


def _rows_str(data, mask) -> str:
    """PyTorch's layout: floats as ``{:8.4f}``, masked-out elements ``--`` right-aligned to 8
    columns (or to the widest element of the row), nested rows indented by two spaces."""
    if data.ndim == 1:
        items = [_format_item(d.item()) for d in data]
        width = max(8 if not m else len(e) for e, m in zip(items, mask))
        return "[" + ", ".join(e if m else "--".rjust(width) for e, m in zip(items, mask)) + "]"
    subs = [_rows_str(d, m) for d, m in zip(data, mask)]
    subs = ["\n".join("  " + line for line in sub.split("\n")) for sub in subs]
    return "[\n" + ",\n".join(subs) + "\n]"


def _masked_tensor_str(mt: MaskedTensor) -> str:
    data = mt.get_data().detach().cpu().numpy()
    mask = mt.get_mask().cpu().numpy()
    if data.ndim == 0:
        shown = _format_item(data.item()) if mask.item() else "--"
        return f"MaskedTensor({shown}, {bool(mask.item())})"
    body = "\n".join("  " + line for line in _rows_str(data, mask).split("\n"))
    return "MaskedTensor(\n" + body + "\n)"
