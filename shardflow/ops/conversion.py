"""dtype and device conversion, clone/contiguous/copy_/fill_ (differentiable where PyTorch is)."""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd import Function, Tensor, no_grad
from ..autograd.dispatch import register
from ..backend import as_dtype, cast, get_array_module, to_device
from ..backend.memory_format import (
    check_memory_format,
    contiguous_format,
    in_memory_format,
    is_channels_last,
)
from . import _grad_graph as _gg
from ._util import fill_scalar, inplace, needs_graph


class ToDtype(Function):
    """Cast. Complex -> real keeps the real part (PyTorch warns, as here); the gradient of a
    real -> complex cast is the real part of the complex gradient."""

    save_inputs = ()

    def forward(self, a, dtype=None):
        self.in_dtype = a.dtype
        if a.dtype.kind == "c" and dtype.np.kind != "c":
            warnings.warn("Casting complex values to real discards the imaginary part",
                          UserWarning, stacklevel=4)
            return cast(a.real, dtype)
        return cast(a, dtype)

    def backward(self, g):
        if g.dtype.kind == "c" and self.in_dtype.kind != "c":
            g = g.real
        return g.astype(self.in_dtype)

    def backward_graph(self, g):
        if g.array.dtype.kind == "c" and self.in_dtype.kind != "c":
            g = _gg.op("real")(g)
        return g if g.array.dtype == self.in_dtype else ToDtype.apply(g, dtype=as_dtype(self.in_dtype))


@register("_to_dtype")
def to_dtype(t: Tensor, dtype) -> Tensor:
    dtype = as_dtype(dtype)
    if t.array.dtype == dtype.np:
        return t
    if t.requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        # an integer or bool result has no gradient: torch's cast gives requires_grad=False and
        # no grad_fn (a gradient through x.int() would be silently wrong)
        with no_grad():
            return ToDtype.apply(t, dtype=dtype)
    return ToDtype.apply(t, dtype=dtype)


class ToDevice(Function):
    save_inputs = ()

    def forward(self, a, device=None):
        from ..backend import device_of

        self.src = device_of(a)
        return to_device(a, device)

    def backward(self, g):
        return to_device(g, self.src)

    def backward_graph(self, g):
        return ToDevice.apply(g, device=self.src)


@register("_to_device")
def to_device_op(t: Tensor, device) -> Tensor:
    return ToDevice.apply(t, device=device)


class Clone(Function):
    save_inputs = ()

    def forward(self, a, memory_format=None):
        out = in_memory_format(a, memory_format)
        if out is not a:
            return out
        # already in the layout asked for: a copy that keeps it (a channels-last one too)
        return get_array_module(a).array(a, copy=True, order="K") if is_channels_last(a) else a.copy()

    def backward(self, g):
        return g

    def backward_graph(self, g):
        return g


@register("clone")
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own memory, laid out as ``memory_format`` says (default
    ``preserve_format``: a channels-last input stays channels-last; ``backend/memory_format.py``;
    channels_last needs a 4-d tensor, as torch)."""
    if memory_format is not None:
        check_memory_format("clone", memory_format, input.ndim)
    return Clone.apply(input, memory_format=memory_format)


@register("contiguous")
def contiguous(t: Tensor, *, memory_format=None) -> Tensor:
    """``t`` itself when it is laid out as ``memory_format`` (default row-major) says, else a
    copy that is (``backend/memory_format.py``); ``preserve_format`` returns ``t``, as torch."""
    if memory_format is not None:
        check_memory_format("contiguous", memory_format, t.ndim)
        if memory_format.name == "preserve_format" or t.is_contiguous(memory_format=memory_format):
            return t
        return Clone.apply(t, memory_format=memory_format)
    if t.array.flags.c_contiguous:
        return t
    return Clone.apply(t, memory_format=contiguous_format)


class _Fill(Function):
    """``t.fill_(v)`` / ``t.zero_()`` recorded in the graph: a constant of ``t``'s shape;
    ``t``'s old value gets a zero gradient (PyTorch's ``FillBackward2`` / ``ZeroBackward0``:
    the tensor keeps requiring grad, and a view's base learns the change, view_inplace.py)."""

    save_inputs = ()

    def forward(self, a, value=0, zero=False):
        self.zero = zero
        return get_array_module(a).full_like(a, value)

    def backward(self, g):
        return get_array_module(g).zeros_like(g)

    def backward_graph(self, g):
        return g * 0


@register("fill_")
def fill_(t: Tensor, value) -> Tensor:
    if isinstance(value, Tensor):
        value = value.item()
    t._check_inplace_allowed("fill_")
    value = fill_scalar(value, t.array.dtype)  # NaN into an int tensor: torch's RuntimeError, not garbage
    if needs_graph(t):
        return inplace(t, _Fill.apply(t, value=value))
    t.array[...] = value
    t._version_counter[0] += 1
    return t


@register("zero_")
def zero_(t: Tensor) -> Tensor:
    if needs_graph(t):
        t._check_inplace_allowed("zero_")
        return inplace(t, _Fill.apply(t, value=0, zero=True))
    return fill_(t, 0)


class _CopyFrom(Function):
    """dst <- broadcast(src). Backward: src gets the gradient summed back to its shape; the
    overwritten destination gets zeros, as in PyTorch (not None: its graph, e.g. the ``b`` of
    ``(b * 1).copy_(a)``, still receives a zero ``.grad`` that optimizers step on)."""

    save_inputs = ()

    def forward(self, dst, src):
        self.dst_shape = dst.shape
        self.src_shape = src.shape
        xp = get_array_module(dst)
        return xp.broadcast_to(cast(src, dst.dtype) if src.dtype != dst.dtype else src, dst.shape).copy()

    def backward(self, g):
        from ._util import unbroadcast

        gsrc = unbroadcast(g, self.src_shape) if self.needs_input_grad[1] else None
        gdst = np.zeros_like(g) if self.needs_input_grad[0] else None
        return gdst, gsrc

    def backward_graph(self, g):
        gsrc = _gg.sum_to(g, self.src_shape) if self.needs_input_grad[1] else None
        return (g * 0 if self.needs_input_grad[0] else None), gsrc


@register("copy_")
def copy_(t: Tensor, src) -> Tensor:
    """Copy ``src`` (broadcast, cast) into ``t``'s memory."""
    if not isinstance(src, Tensor):
        src = Tensor(np.asarray(src))
    if needs_graph(src, t):
        return inplace(t, _CopyFrom.apply(t, src))
    if src.array.shape != t.array.shape:
        try:
            np.broadcast_shapes(src.array.shape, t.array.shape)
        except ValueError:
            raise RuntimeError(
                f"copy_: source of shape {tuple(src.shape)} cannot be broadcast to destination "
                f"shape {tuple(t.shape)}"
            ) from None
    xp = get_array_module(t.array)
    s = src.array if xp is get_array_module(src.array) else to_device(src.array, t.device)
    t.array[...] = cast(s, t.array.dtype) if s.dtype != t.array.dtype else s
    t._version_counter[0] += 1
    return t
