"""The rest of the torch-namespace gap list that is not math: ``range`` (deprecated,
end-inclusive), ``fill``, ``frombuffer``, ``from_dlpack`` / ``to_dlpack``, ``empty_permuted``,
``new_empty_strided``, ``resize_`` / ``resize_as_`` / ``resize`` / ``resize_as``, the in-place
forms ``bitwise_left_shift_`` ... ``nextafter_``, the top-level ``dropout_`` family and
``feature_dropout``, ``Tensor.hardshrink`` / ``Tensor.prelu``, ``Tensor.as_subclass``, ``Tensor.dim_order``,
``Tensor.module_load``, ``Tensor.reinforce`` (PyTorch's removal error), and the
top-level ``get_device`` / ``is_inference`` / ``addmv_`` of existing methods, ``is_distributed``,
``Tensor.map2_``.

* ``range(start=0, end, step=1)``: ``start + i * step`` for ``i = 0 .. floor((end - start) /
  step)`` (``end`` included), in the default float dtype unless ``dtype`` says otherwise;
  PyTorch's deprecation warning.
* ``frombuffer``: NumPy's ``frombuffer`` (shares the buffer's memory, as PyTorch; a
  read-only buffer warns as PyTorch does and gives a tensor that cannot be written).
* ``from_dlpack(obj)``: anything with ``__dlpack__`` (a torch or NumPy or CuPy array; CUDA
  ones through CuPy) or a DLPack capsule (``to_dlpack``'s output, read on the host); the
  result shares memory. ``to_dlpack(t)`` is the array's capsule.
* ``empty_permuted(size, physical_layout)``: allocated in the permuted order, then
  transposed back, so ``stride()`` is PyTorch's.
* ``resize_(*sizes)``: the tensor's array becomes one of the new shape holding the first
  elements of the old (in row-major order); new elements are uninitialised (PyTorch's
  semantics; refused on tensors that require grad, as PyTorch). When the new size fits in a
  contiguous tensor's elements the result is a view of them, so it keeps the storage (as
  PyTorch: DataLoader's ``tensor.new(shared_storage).resize_(...)``). ``resize`` / ``resize_as``
  (deprecated, out of place) are reshapes that need the same element count (PyTorch's
  ``autograd._functions.Resize``).
* ``as_subclass(cls)``: an alias of the tensor (``view_as``, so it stays in the graph) whose
  class is ``cls`` (``cls.__init__`` is not run, as PyTorch).
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..autograd.out_arg import writes_out
from ..backend import as_dtype, dtypes, get_array_module
from ..backend import device as _device
from ..backend.xp import cupy
from ..backends import fill_uninitialized, uninitialized_fill_value
from ._factory_options import check_factory_options
from ._util import inplace, refuse_complex
from .dropout import _alpha, _dropout, _feature_dropout_shape
from .math_extra import heaviside, ldexp, nextafter
from .misc_extra import bitwise_left_shift, bitwise_right_shift
from .tensor_methods import (  # re-exported at the top level (torch.get_device(t))
    addmv_,
    get_device,
    is_inference,
)

__all__ = ["range", "fill", "frombuffer", "from_dlpack", "to_dlpack", "empty_permuted", "resize_as_",
           "ldexp_", "dropout_", "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout",
           "feature_dropout_", "get_device", "is_inference", "is_distributed", "addmv_", "prelu"]


def _ops():
    from .. import ops

    return ops


# ---------------------------------------------------------------------------- range / fill
@writes_out("range")
def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,
          requires_grad: bool = False) -> Tensor:
    """Deprecated end-inclusive ``arange``: ``start, start + step, ..., <= end``."""
    check_factory_options("range", layout)
    from .creation import tensor

    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    start, end, step = (float(v.item()) if isinstance(v, Tensor) else float(v) for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    vals = start + np.arange(n, dtype=np.float64) * step
    d = as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    return tensor(vals, dtype=d, device=device, requires_grad=requires_grad)


@register("fill")
def fill(input, value) -> Tensor:
    """A new tensor like ``input`` with every element ``value`` (a number or 0-d tensor)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                               f"dimensions.")
        return value.to(input.dtype).expand(*input.shape).clone()
    return _ops().full_like(input, value)


# ---------------------------------------------------------------------------- buffers / DLPack
def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the memory of a Python buffer (bytes, bytearray, array.array, ...)."""
    d = as_dtype(dtype)
    length = memoryview(buffer).nbytes
    size = d.np.itemsize if d.np.kind != "V" else 2
    if length <= 0 and count != 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= max(length, 1):
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count <= 0 and (length - offset) % size:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                         f"multiple of element size ({size})")
    if count > 0 and count * size > length - offset:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    arr = np.frombuffer(buffer, dtype=d.np, count=count if count > 0 else -1, offset=offset)
    if not arr.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. "
                      "This means you can write to the underlying (supposedly non-writable) buffer using the "
                      "tensor. You may want to copy the buffer to protect its data or make it writable before "
                      "converting it to a tensor.", UserWarning, stacklevel=2)
    t = _wrap(arr)
    return t.requires_grad_(True) if requires_grad else t


class _Capsule:
    """A DLPack capsule (``to_dlpack``'s output) offered to NumPy's ``from_dlpack``."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def from_dlpack(ext_tensor, *, device=None, copy=None) -> Tensor:
    """A tensor sharing the memory of a DLPack-capable array (or a DLPack capsule).

    ``device=``: the result is moved there (a copy); ``copy=True`` always copies,
    ``copy=False`` never does (a ``device`` that needs a move raises ValueError), ``None``
    copies only to move: PyTorch's keywords."""
    out = _from_dlpack(ext_tensor)
    if device is not None and out.device != _device(device):
        if copy is False:
            raise ValueError(f"from_dlpack(device={device!r}, copy=False): the array is on {out.device}; "
                             "moving it needs a copy (pass copy=None or copy=True)")
        return out.to(device)
    return out.clone() if copy else out


def _from_dlpack(ext_tensor) -> Tensor:
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ == "PyCapsule":
            try:
                return _wrap(np.from_dlpack(_Capsule(ext_tensor)))
            except (BufferError, RuntimeError, TypeError, ValueError):  # not a host capsule: CuPy's
                return _wrap(cupy().from_dlpack(ext_tensor))
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a tensor or array) or a DLPack capsule, "
                        f"got {type(ext_tensor).__name__}")
    device_type = ext_tensor.__dlpack_device__()[0] if hasattr(ext_tensor, "__dlpack_device__") else 1
    if device_type in (1, 3):  # kDLCPU, kDLCUDAHost
        return _wrap(np.from_dlpack(ext_tensor))
    return _wrap(cupy().from_dlpack(ext_tensor))  # a GPU array (CuPy's install hint if it is missing)


def to_dlpack(tensor) -> object:
    """The DLPack capsule of ``tensor``'s array (shares memory)."""
    return tensor.array.__dlpack__()


# ---------------------------------------------------------------------------- layouts
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` whose memory is laid out in ``physical_layout`` order."""
    check_factory_options("empty_permuted", layout, pin_memory)
    size, perm = tuple(int(s) for s in size), tuple(int(p) for p in physical_layout)
    if sorted(perm) != list(builtins.range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"physical_layout must be a permutation of 0..{len(size) - 1}, got {list(perm)}")
    t = _ops().empty(tuple(size[p] for p in perm), dtype=dtype, device=device)
    out = _wrap(t.array.transpose(tuple(int(i) for i in np.argsort(perm))))
    return out.requires_grad_(True) if requires_grad else out


@register("new_empty_strided")
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                      pin_memory: bool = False) -> Tensor:
    """``empty_strided`` with this tensor's dtype and device unless given."""
    return _ops().empty_strided(size, stride, dtype=dtype or self.dtype, layout=layout, device=device or self.device,
                                requires_grad=requires_grad, pin_memory=pin_memory)


# ---------------------------------------------------------------------------- resize
def _sizes(sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    return tuple(int(s) for s in sizes)


@register("resize_")
def resize_(self, *sizes, memory_format=None) -> Tensor:
    """Give the tensor shape ``sizes``, keeping its first elements (module docstring)."""
    shape = _sizes(sizes)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    a = self.array
    if tuple(a.shape) == shape:
        return self
    xp = get_array_module(a)
    n_new = int(np.prod(shape)) if shape else 1
    if n_new <= a.size and a.flags.c_contiguous:  # fits: torch keeps the storage (a view of it)
        self.array = a.reshape(-1)[:n_new].reshape(shape)
        self._version_counter[0] += 1
        return self
    new = xp.empty(shape, dtype=a.dtype)
    if fill_uninitialized():  # the grown part, as torch.utils.deterministic.fill_uninitialized_memory
        new.fill(uninitialized_fill_value(a.dtype))
    keep = min(a.size, n_new)
    new.reshape(-1)[:keep] = a.reshape(-1)[:keep]
    self.array = new
    self._version_counter[0] += 1
    return self


@register("resize_as_")
def resize_as_(self, the_template, *, memory_format=None) -> Tensor:
    """``resize_`` to ``the_template``'s shape."""
    return resize_(self, tuple(the_template.shape))


def _deprecated_resize(self, shape, name):
    warnings.warn(f"non-inplace {name} is deprecated", stacklevel=3)
    n = int(np.prod(shape)) if shape else 1
    if n != self.numel():
        raise RuntimeError(f"{name}: requested a shape {list(shape)} with {n} elements, but the tensor has "
                           f"{self.numel()} elements; the non-inplace form only reshapes (use resize_ to change "
                           f"the element count)")
    return self.reshape(shape)


@register("resize")
def resize(self, *sizes) -> Tensor:
    """Deprecated out-of-place resize: a reshape to ``sizes`` (same element count)."""
    return _deprecated_resize(self, _sizes(sizes), "resize")


@register("resize_as")
def resize_as(self, tensor) -> Tensor:
    """Deprecated out-of-place ``resize_as``: a reshape to ``tensor``'s shape."""
    return _deprecated_resize(self, tuple(tensor.shape), "resize_as")


# ---------------------------------------------------------------------------- in-place forms
def _inplace_form(name, fn):
    def method(self, other):
        out = fn(self, other)
        if out.dtype is not self.dtype:
            if not (out.dtype.is_floating_point and not self.dtype.is_floating_point):
                out = out.to(self.dtype)
            else:
                raise RuntimeError(f"result type {out.dtype} can't be cast to the desired output type "
                                   f"{self.dtype}")
        return inplace(self, out)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name.rstrip('_')}``."
    return register(name)(method)


bitwise_left_shift_ = _inplace_form("bitwise_left_shift_", bitwise_left_shift)
bitwise_right_shift_ = _inplace_form("bitwise_right_shift_", bitwise_right_shift)
heaviside_ = _inplace_form("heaviside_", heaviside)
ldexp_ = _inplace_form("ldexp_", ldexp)
nextafter_ = _inplace_form("nextafter_", nextafter)


# ---------------------------------------------------------------------------- dropout family
@register("dropout_")
def dropout_(input, p: float, train: bool) -> Tensor:
    """``torch.dropout_(input, p, train)``: dropout in place."""
    return _dropout(input, p, train, True, lambda s: s, "dropout")


@register("alpha_dropout_")
def alpha_dropout_(input, p: float, train: bool) -> Tensor:
    return _alpha(input, p, train, True, lambda s: s, "alpha_dropout")


@register("feature_alpha_dropout_")
def feature_alpha_dropout_(input, p: float, train: bool) -> Tensor:
    return _alpha(input, p, train, True, _feature_dropout_shape, "feature_alpha_dropout")


@register("feature_dropout")
def feature_dropout(input, p: float, train: bool) -> Tensor:
    """Dropout of whole features: one draw per (dim 0, dim 1) pair (PyTorch's ``feature_dropout``)."""
    return _dropout(input, p, train, False, _feature_dropout_shape, "feature_dropout")


@register("feature_dropout_")
def feature_dropout_(input, p: float, train: bool) -> Tensor:
    return _dropout(input, p, train, True, _feature_dropout_shape, "feature_dropout")


# ---------------------------------------------------------------------------- methods of nn.functional ops
@register("hardshrink")
def hardshrink(input, lambd: float = 0.5) -> Tensor:
    """``0 where -lambd <= x <= lambd, else x`` (PyTorch's test: a NaN is kept, its gradient
    passes)."""
    refuse_complex(input, kernel="hardshrink_cpu")
    return _ops().where((input >= -lambd) & (input <= lambd), 0.0, input)


@register("prelu")
def prelu(input, weight) -> Tensor:
    """``max(0, x) + weight * min(0, x)``; a (C,) ``weight`` applies along dim 1."""
    refuse_complex(input, kernel="prelu_cpu")  # no order on complex numbers (torch's words)
    w = weight
    if weight.numel() > 1:
        channels = input.shape[1] if input.ndim >= 2 else (input.shape[0] if input.ndim == 1 else 1)
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        if input.ndim >= 2:
            w = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    return _ops().where(input > 0, input, input * w)


@register("as_subclass")
def as_subclass(self, cls) -> Tensor:
    """An alias of ``self`` (same memory, same graph) whose class is ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: cls must be a subclass of Tensor, got {cls!r}")
    alias = self.view_as(self)
    out = object.__new__(cls)
    for klass in Tensor.__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if not slot.startswith("__") and hasattr(alias, slot):
                setattr(out, slot, getattr(alias, slot))
    return out


@register("dim_order")
def dim_order(self, *, ambiguity_check=False) -> tuple:
    """Dims from outermost to innermost in memory: sorted by stride, largest first (ties keep
    their order, as PyTorch). ``ambiguity_check=True`` raises where a tie makes it ambiguous."""
    strides = self.stride()
    order = tuple(sorted(builtins.range(self.ndim), key=lambda i: strides[i], reverse=True))
    if ambiguity_check is True and len(set(strides)) != len(strides):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")
    return order


@register("module_load")
def module_load(self, other, assign: bool = False) -> Tensor:
    """How ``load_state_dict`` turns ``other`` into this parameter's value (PyTorch's default:
    ``other.detach()`` with ``assign``, else ``self.copy_(other).detach()``)."""
    return other.detach() if assign else self.copy_(other).detach()


@register("reinforce")
def reinforce(self, reward):
    """Removed from PyTorch long ago; raises PyTorch's message pointing to distributions."""
    raise RuntimeError(
        "reinforce() was removed.\nUse torch.distributions instead.\n"
        "See https://pytorch.org/docs/main/distributions.html\n\n"
        "Instead of:\n\nprobs = policy_network(state)\naction = probs.multinomial()\n"
        "next_state, reward = env.step(action)\naction.reinforce(reward)\naction.backward()\n\n"
        "Use:\n\nprobs = policy_network(state)\n"
        "# NOTE: categorical is equivalent to what used to be called multinomial\n"
        "m = torch.distributions.Categorical(probs)\naction = m.sample()\n"
        "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\nloss.backward()\n")


# ---------------------------------------------------------------------------- top-level forms of methods
# torch.get_device(t) / torch.is_inference(t): the ops tensor_methods.py registers (imported above)


@register("is_distributed")
def is_distributed(input) -> bool:
    """``torch.is_distributed(t)``: False (PyTorch's answer for every tensor it makes today;
    shardflow's global tensors are asked with ``is_global``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' must be Tensor, not {type(input).__name__}")
    return False


@register("map2_")
def map2_(self, x, y, callable) -> Tensor:
    """``self[i] = callable(self[i], x[i], y[i])`` in place (CPU tensors, no autograd; ``x`` and
    ``y`` broadcast to ``self``), PyTorch's legacy ``map2_``."""
    if self.device.type != "cpu":
        raise TypeError("map2_ is only implemented on CPU tensors")
    a = self.array
    xs = [np.broadcast_to(t.array if isinstance(t, Tensor) else np.asarray(t), a.shape) for t in (x, y)]
    a[...] = np.vectorize(callable, otypes=[a.dtype])(a, *xs)
    self._version_counter[0] += 1
    return self
