"""``Tensor`` methods and ``torch`` functions from the torch-namespace gap list that are not
math: in-place forms (``tril_``, ``cumsum_``, comparisons ``eq_`` ..., ``logical_and_`` ...,
``addmm_`` ..., ``sgn_``, the ``multiply_``-style aliases), in-place view
changes (``t_``, ``transpose_``, ``swapaxes_``, ``unsqueeze_``, ``squeeze_``), ``new``,
``sum_to_size``, ``get_device``, ``pin_memory`` / ``is_pinned``,
``apply_`` / ``map_``, ``is_inference``; and ``scalar_tensor``, ``logspace``, ``empty_strided``,
``asarray``, ``detach``, ``rsub``.

In-place forms compute out of place and go through ``_util.inplace`` (PyTorch's history
rebase when autograd records them). A comparison or logical op written in place keeps the
tensor's dtype (``x.eq_(y)`` leaves 0./1. in a float tensor), as PyTorch. The in-place view
changes make the tensor a view with the new shape (same memory); with autograd recording
they rebase like any in-place op. ``pin_memory`` raises PyTorch's CPU-build error without
CUDA and returns the tensor with CUDA (shardflow's host copies are never pinned, so
``is_pinned`` is False).
"""

from __future__ import annotations

import inspect

import numpy as np

from ..autograd import Tensor, _wrap, grad_mode
from ..autograd.dispatch import register
from ..backend import as_dtype, cuda_is_available, dtypes
from ._factory_options import check_factory_options
from ._util import inplace
from .arithmetic import div, mul, sub
from .comparison import (
    eq,
    ge,
    gt,
    le,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    ne,
)
from .linalg_ops import addbmm
from .matmul import addmm, baddbmm
from .reduce import cumprod, cumsum
from .rounding import sgn
from .shape import squeeze, swapaxes, t, transpose, tril, triu, unsqueeze
from .tensor_products import addmv, addr

__all__ = ["scalar_tensor", "logspace", "empty_strided", "asarray", "detach", "rsub"]


def _ops():
    from .. import ops

    return ops


def _inplace_method(name, fn, keep_dtype=False):
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        if keep_dtype and out.dtype is not self.dtype:
            out = out.to(self.dtype)
        return inplace(self, out)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name.rstrip('_')}``."
    # the keywords are fn's (which refuses others): say so to inspect.signature, the keyword
    # audit (scripts/signature_gaps.py) and the NumPy-spelling renaming (numpy_kwargs.py)
    method.__signature__ = inspect.signature(fn)
    return register(name)(method)  # the routed form


_INPLACE = {}
for _name, _fn in (("tril_", tril), ("triu_", triu), ("cumsum_", cumsum), ("cumprod_", cumprod),
                   ("addmm_", addmm), ("baddbmm_", baddbmm), ("addmv_", addmv), ("addr_", addr),
                   ("addbmm_", addbmm), ("sgn_", sgn), ("multiply_", mul),
                   ("subtract_", sub), ("divide_", div), ("true_divide_", div)):
    _INPLACE[_name] = _inplace_method(_name, _fn)
addmv_ = _INPLACE["addmv_"]  # also torch's top-level torch.addmv_ (ops/tensor_compat.py)
for _name, _fn in (("eq_", eq), ("ne_", ne), ("not_equal_", ne), ("lt_", lt), ("less_", lt), ("le_", le),
                   ("less_equal_", le), ("gt_", gt), ("greater_", gt), ("ge_", ge), ("greater_equal_", ge),
                   ("logical_and_", logical_and), ("logical_or_", logical_or), ("logical_xor_", logical_xor),
                   ("logical_not_", logical_not)):
    _inplace_method(_name, _fn, keep_dtype=True)


# ---------------------------------------------------------------------------- in-place view changes
def _inplace_view(self: Tensor, result: Tensor) -> Tensor:
    if result.requires_grad and result.grad_fn is not None:
        return self._inplace(result)  # rebase (checks leaves and versions)
    self.array = result.array  # same memory, new shape
    return self


def _view_method(name, fn):
    def method(self, *args, **kwargs):
        return _inplace_view(self, fn(self, *args, **kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name.rstrip('_')}`` (the tensor becomes that view of its memory)."
    method.__signature__ = inspect.signature(fn)  # fn's keywords (see _inplace_method)
    register(name)(method)


for _name, _fn in (("t_", t), ("transpose_", transpose), ("swapaxes_", swapaxes), ("swapdims_", transpose),
                   ("unsqueeze_", unsqueeze), ("squeeze_", squeeze)):
    _view_method(_name, _fn)


# ---------------------------------------------------------------------------- methods
@register("new")
def new(self, *args, **kwargs) -> Tensor:
    """Legacy ``x.new(...)``: ``Tensor(*args)`` with ``x``'s dtype and device."""
    device = kwargs.pop("device", self.device)
    dtype = kwargs.pop("dtype", self.dtype)
    if kwargs:  # torch's new() takes only device (and dtype); an unknown keyword was dropped
        raise TypeError(f"new() got an unexpected keyword argument '{next(iter(kwargs))}'")
    t = Tensor(*args, dtype=dtype) if args else Tensor(
        np.empty((0,), self.dtype.np))
    return t.to(device) if str(device) != "cpu" else t


@register("sum_to_size")
def sum_to_size(self, *size) -> Tensor:
    """Sum ``self`` down to ``size`` (which ``self`` must broadcast from: the reverse of expand)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], list | tuple) else tuple(size)
    try:
        np.broadcast_shapes(size, tuple(self.shape))
        ok = np.broadcast_shapes(size, tuple(self.shape)) == tuple(self.shape)
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(self.shape)}")
    lead = self.ndim - len(size)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and self.shape[lead + i] != 1)
    out = self.sum(dims, keepdim=True) if dims else self
    return out.reshape(size) if lead else out


@register("get_device")
def get_device(self) -> int:
    """The CUDA device index, -1 on the CPU."""
    d = self.device
    return (d.index or 0) if d.type == "cuda" else -1


@register("pin_memory")
def pin_memory(self, device=None) -> Tensor:
    """PyTorch's CPU-build error without CUDA; with CUDA the tensor itself (module docstring)."""
    if not cuda_is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return self


@register("is_pinned")
def is_pinned(self, device=None) -> bool:
    return False


@register("is_inference")
def is_inference(self) -> bool:
    """Whether ``self`` was made by an op inside ``inference_mode`` (``torch.is_inference``)."""
    return grad_mode.is_inference_tensor(self)


@register("apply_")
def apply_(self, callable) -> Tensor:
    """Apply a Python function to every element, in place (CPU tensors, no autograd)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    a = self.array
    a[...] = np.vectorize(callable, otypes=[a.dtype])(a)
    self._version_counter[0] += 1
    return self


@register("map_")
def map_(self, tensor, callable) -> Tensor:
    """``self[i] = callable(self[i], tensor[i])`` in place (CPU tensors, no autograd)."""
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    a = self.array
    b = np.broadcast_to(tensor.array if isinstance(tensor, Tensor) else np.asarray(tensor), a.shape)
    a[...] = np.vectorize(callable, otypes=[a.dtype])(a, b)
    self._version_counter[0] += 1
    return self


# ---------------------------------------------------------------------------- functions
@register("scalar_tensor")
def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding ``s`` (the default float dtype unless ``dtype`` says otherwise)."""
    from .creation import tensor

    return tensor(float(s) if dtype is None else s, dtype=dtype or dtypes.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


@register("logspace")
def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)`` (``start``/``end`` numbers or 0-d tensors)."""
    from .creation import range_arguments, tensor

    check_factory_options("logspace", layout)
    start, end, steps = range_arguments("logspace", start, end, steps)
    d = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    vals = np.power(float(base), np.linspace(float(start), float(end), steps))
    return tensor(vals, dtype=d, device=device, requires_grad=requires_grad)


@register("empty_strided")
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` (shardflow's arrays are row-major; ``stride`` is
    checked for length and otherwise not used)."""
    check_factory_options("empty_strided", layout, pin_memory)
    if len(tuple(stride)) != len(tuple(size)):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(tuple(stride))} vs {len(tuple(size))}")
    return _ops().empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


@register("asarray")
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """A tensor from ``obj``, sharing memory when ``obj`` is a tensor or NumPy array of that
    dtype and device and ``copy`` is not True (PyTorch's ``asarray``)."""
    from .creation import tensor

    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None and as_dtype(dtype) is not obj.dtype:
            out = obj.to(dtype)
        if device is not None and out.device != device:
            out = out.to(device)
        if copy and out is obj:
            out = obj.clone()
        return out.requires_grad_(requires_grad) if requires_grad else out
    if isinstance(obj, np.ndarray) and not copy and (dtype is None or as_dtype(dtype).np == obj.dtype) and (
            device is None or str(device) == "cpu"):
        t = _wrap(obj)
        return t.requires_grad_(requires_grad) if requires_grad else t
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


@register("detach")
def detach(input) -> Tensor:
    """``input.detach()``."""
    return input.detach()


@register("rsub")
def rsub(input, other, *, alpha=1) -> Tensor:
    """``other - alpha * input`` (torch's node ``RsubBackward1`` for a number ``other``, and its
    refusal of a bool tensor): ``sub(other, input, alpha=alpha)``."""
    return _ops().sub(other, input, alpha=alpha)

