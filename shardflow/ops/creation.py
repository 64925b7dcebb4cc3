"""Tensor creation: tensor, zeros, ones, full, empty, arange, linspace, eye, rand, randn,
randint, *_like, from_numpy, and the in-place random fills (normal_, uniform_, ...)."""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, _wrap
from ..autograd.dispatch import register
from ..autograd.tensor import _as_array
from ..backend import (
    CPU,
    as_dtype,
    dtypes,
    get_default_device,
    is_device_array,
    new_array,
    to_device,
)
from ..backend import device as _device
from ..backend import random as _random
from ..backend import random_stream as _stream
from ..backend.memory_format import check_memory_format, in_memory_format
from ..backend.meta import MetaArray, is_meta_array
from ..backend.user_warning import warn_at_caller
from ..backends import fill_uninitialized, uninitialized_fill_value
from ._factory_options import check_factory_options
from ._util import fill_scalar

__all__ = [
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "zeros_like",
    "ones_like", "full_like", "empty_like", "arange", "linspace", "eye", "rand", "randn",
    "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal", "bernoulli",
]


def _size(size):
    if len(size) == 1 and isinstance(size[0], list | tuple):
        size = tuple(size[0])
    # an integer tensor of one element is a size, as in torch (``torch.zeros((n,
    # lengths.max()))``: the packed-sequence tutorials size their padding that way)
    size = tuple(_tensor_size(s) if isinstance(s, Tensor) else s for s in size)
    for s in size:
        if not isinstance(s, int | np.integer):  # torch: TypeError; a negative size: RuntimeError
            raise TypeError(f"sizes must be non-negative integers, got {tuple(size)}")
        if s < 0:
            raise RuntimeError(f"Dimension size must be non-negative: sizes must be non-negative "
                               f"integers, got {tuple(size)}")
    return tuple(int(s) for s in size)


def _tensor_size(t: Tensor):
    """A one-element integer tensor's value (what torch's size parsing takes through
    ``__index__``); any other tensor is left for the caller's TypeError."""
    if t.numel() == 1 and t.dtype.is_floating_point is False and t.dtype.is_complex is False and t.dtype != dtypes.bool_:
        return int(t.item())
    return t


def _sizes(sizes: tuple, size, op: str) -> tuple:
    """The shape of ``op(*sizes)`` or ``op(size=...)`` (PyTorch accepts both spellings)."""
    if size is None:
        return _size(sizes)
    if sizes:
        raise TypeError(f"{op}() got the sizes both as positional arguments {sizes} and as size={size!r}; pass one")
    return _size((size,) if isinstance(size, int | np.integer) else tuple(size))


def _target(device) -> _device:
    """``device=`` or, when None, the default device (``set_default_device``)."""
    return get_default_device() if device is None else _device(device)


def _finish(arr, dtype, device, requires_grad) -> Tensor:
    dev = _target(device)
    if dev.type != "cpu":
        arr = to_device(arr, dev)
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _float(dtype):
    return as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()


def _meta(shape, np_dtype, device, requires_grad):
    """A meta tensor (``backend/meta.py``) when ``device`` (or the default device) is meta,
    else None: random ops return it without drawing, as PyTorch's meta tensors consume no
    random numbers."""
    if _target(device).type != "meta":
        return None
    return _finish(MetaArray(shape, np_dtype), None, "meta", requires_grad)


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Copy ``data`` (nested lists, numbers, NumPy arrays, Tensors) into a new Tensor."""
    check_factory_options("tensor", pin_memory=pin_memory)
    if isinstance(data, Tensor):
        warn_at_caller(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
            "or sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).")
        data = data.array
    if isinstance(data, np.ndarray):
        data = np.array(data, copy=True)  # a new tensor never shares memory with its source
    elif is_device_array(data):
        data = data.copy()
    return _finish(_as_array(data, dtype), dtype, device, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor):
        return data.to(dtype) if dtype is not None else data
    return _finish(_as_array(data, dtype), dtype, device, False)


def from_numpy(array: np.ndarray) -> Tensor:
    """Share memory with ``array`` (no copy), like ``torch.from_numpy``."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return _wrap(array)


@register("zeros")
def zeros(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    check_factory_options("zeros", layout, pin_memory)
    dev = _target(device)  # made where it lives: no host buffer and copy for a GPU tensor
    shape = _sizes(sizes, size, "zeros")
    arr = new_array(dev, lambda xp: xp.zeros(shape, _float(dtype).np))
    return _finish(arr, dtype, dev, requires_grad)


@register("ones")
def ones(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    check_factory_options("ones", layout, pin_memory)
    dev = _target(device)
    shape = _sizes(sizes, size, "ones")
    arr = new_array(dev, lambda xp: xp.ones(shape, _float(dtype).np))
    return _finish(arr, dtype, dev, requires_grad)


@register("empty")
def empty(*sizes, size=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None) -> Tensor:
    check_factory_options("empty", layout, pin_memory, memory_format, preserve_ok=False)
    dev = _target(device)
    shape = _sizes(sizes, size, "empty")
    arr = new_array(dev, lambda xp: xp.empty(shape, _float(dtype).np))
    if fill_uninitialized() and not is_meta_array(arr):  # torch.utils.deterministic's switch
        arr.fill(uninitialized_fill_value(arr.dtype))
    if memory_format is not None:
        check_memory_format("empty", memory_format, len(shape))
        arr = in_memory_format(arr, memory_format)
    return _finish(arr, dtype, dev, requires_grad)


def _laid_out_like(t: Tensor, input: Tensor, memory_format) -> Tensor:
    """A fresh ``*_like`` result ``t`` in ``memory_format``'s layout; the default,
    ``preserve_format``, keeps ``input``'s channels-last layout (``backend/memory_format.py``)."""
    if memory_format is not None and memory_format.name != "preserve_format":
        check_memory_format("empty_like", memory_format, t.ndim)
    arr = in_memory_format(t.array, memory_format, like=input.array)
    if arr is not t.array:
        t.array = arr  # a new leaf: no history to keep
    return t


@register("full")
def full(size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    check_factory_options("full", layout, pin_memory)
    if dtype is None:
        dtype = dtypes.result_type([fill_value])
    dev = _target(device)
    fill_value = fill_scalar(fill_value, as_dtype(dtype).np)  # (torch's overflow check; -1 wraps for uint8)
    arr = new_array(dev, lambda xp: xp.full(_size((size,)), fill_value, as_dtype(dtype).np))
    return _finish(arr, dtype, dev, requires_grad)


def _like(t: Tensor, dtype):
    return as_dtype(dtype) if dtype is not None else t.dtype


@register("zeros_like")
def zeros_like(input: Tensor, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    check_factory_options("zeros_like", layout, memory_format=memory_format)
    return _laid_out_like(zeros(*input.shape, dtype=_like(input, dtype), device=device or input.device, requires_grad=requires_grad), input, memory_format)


@register("ones_like")
def ones_like(input: Tensor, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    check_factory_options("ones_like", layout, memory_format=memory_format)
    return _laid_out_like(ones(*input.shape, dtype=_like(input, dtype), device=device or input.device, requires_grad=requires_grad), input, memory_format)


@register("empty_like")
def empty_like(input: Tensor, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    check_factory_options("empty_like", layout, memory_format=memory_format)
    return _laid_out_like(empty(*input.shape, dtype=_like(input, dtype), device=device or input.device, requires_grad=requires_grad), input, memory_format)


@register("full_like")
def full_like(input: Tensor, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    check_factory_options("full_like", layout, memory_format=memory_format)
    return _laid_out_like(full(tuple(input.shape), fill_value, dtype=_like(input, dtype), device=device or input.device, requires_grad=requires_grad), input, memory_format)


@register("arange")
def arange(start, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    check_factory_options("arange", layout)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:  # torch refuses it (NumPy would return an empty range)
        raise RuntimeError(f"upper bound and lower bound inconsistent with step sign: arange({start}, "
                           f"{end}, {step}); use a step of the other sign")
    if dtype is None:
        dtype = dtypes.result_type([start, end, step])
    arr = np.arange(start, end, step, dtype=np.float64 if as_dtype(dtype).is_floating_point else np.int64)
    return _finish(arr.astype(as_dtype(dtype).np), dtype, device, requires_grad)


def _linspace_float32(start, end, steps: int) -> np.ndarray:
    """PyTorch's CPU float32 ``linspace`` to the bit: ``step = (end - start) / (steps - 1)``
    in float32, the first half ``start + step * i`` and the second ``end - step * (steps -
    1 - i)``, each one fused multiply-add (one rounding; the float32 product is exact in
    float64). NumPy's float64 ``linspace`` rounded once differs by an ulp at some points,
    enough to move a pixel-centre grid (``affine_grid``) across a bilinear kink."""
    s, e = np.float32(start), np.float32(end)
    step = np.float64((e - s) / np.float32(steps - 1))
    i = np.arange(steps, dtype=np.float64)
    half = i < steps // 2
    return np.where(half, np.float64(s) + step * i, np.float64(e) - step * (steps - 1 - i)).astype(np.float32)


def range_arguments(name: str, start, end, steps):
    """``linspace``/``logspace``'s ``start``/``end`` as numbers (a 0-d tensor is its value, as
    torch takes it) and ``steps`` as an int, with torch's errors: a tensor with dims, a float or
    negative ``steps``."""
    values = []
    for which, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor):
            if v.ndim != 0:
                raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got {which} with "
                                   f"{v.ndim} dimension(s).")
            v = v.item()
        values.append(v)
    if isinstance(steps, float):
        raise TypeError(f"{name}(): argument 'steps' must be int, not float (got {steps!r}); pass int(steps)")
    steps = int(steps)
    if steps < 0:
        raise RuntimeError(f"number of steps must be non-negative (got steps={steps})")
    return values[0], values[1], steps


@register("linspace")
def linspace(start, end, steps, *, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` (numbers or 0-d tensors)."""
    check_factory_options("linspace", layout)
    np_dtype = _float(dtype).np
    start, end, steps = range_arguments("linspace", start, end, steps)
    if np_dtype == np.float32 and steps > 1 and all(isinstance(v, int | float) for v in (start, end)):
        arr = _linspace_float32(start, end, steps)
    else:
        arr = np.linspace(start, end, steps, dtype=np.float64).astype(np_dtype)
    return _finish(arr, dtype, device, requires_grad)


@register("eye")
def eye(n, m=None, *, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    check_factory_options("eye", layout)
    return _finish(np.eye(n, m, dtype=_float(dtype).np), dtype, device, requires_grad)


@register("rand")
def rand(*sizes, size=None, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False) -> Tensor:
    """``empty(size).uniform_(0, 1)``: torch's stream (``backend/random_stream.py``)."""
    check_factory_options("rand", layout, pin_memory)
    sz = _sizes(sizes, size, "rand")
    np_dtype = _float(dtype).np
    meta = _meta(sz, np_dtype, device, requires_grad)
    if meta is not None:
        return meta
    arr = np.empty(sz, np_dtype)  # drawn into: the peak is the tensor plus a ~1 MB chunk
    flat = _real_parts(arr)
    _stream.uniform(_random.get(generator), flat.size, 0.0, 1.0, flat.dtype, out=flat)
    return _finish(arr, dtype, device, requires_grad)


def _real_parts(arr: np.ndarray) -> np.ndarray:
    """The flat array a random fill of ``arr`` (C-contiguous) draws into: itself, or for a
    complex array its interleaved real and imaginary parts (torch fills a complex tensor
    through ``view_as_real``; shardflow wrote the draws into the real parts only, leaving
    every imaginary part 0: FNO's ``torch.rand(..., dtype=torch.cfloat)`` weights)."""
    if arr.dtype.kind != "c":
        return arr.reshape(-1)
    return arr.reshape(-1).view(arr.real.dtype)


def _complex_std(arr, std: float) -> float:
    """torch's ``normal_`` on a complex tensor: each part gets ``std / sqrt(2)`` (so that the
    complex value has variance ``std**2``)."""
    return std / np.sqrt(2.0) if arr.dtype.kind == "c" else std


@register("randn")
def randn(*sizes, size=None, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False) -> Tensor:
    """``empty(size).normal_(0, 1)``: torch's stream (``backend/random_stream.py``)."""
    check_factory_options("randn", layout, pin_memory)
    sz = _sizes(sizes, size, "randn")
    np_dtype = _float(dtype).np
    meta = _meta(sz, np_dtype, device, requires_grad)
    if meta is not None:
        return meta
    arr = np.empty(sz, np_dtype)
    flat = _real_parts(arr)
    _stream.normal(_random.get(generator), flat.size, 0.0, _complex_std(arr, 1.0), flat.dtype, out=flat)
    return _finish(arr, dtype, device, requires_grad)


@register("randint")
def randint(low, high=None, size=None, *, generator=None, dtype=None, layout=None, device=None,
            requires_grad=False) -> Tensor:
    """``empty(size, int64).random_(low, high)``: torch's stream."""
    check_factory_options("randint", layout)
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    int_dtype = (as_dtype(dtype) if dtype is not None else dtypes.int64).np
    sz = _size((size,))
    meta = _meta(sz, int_dtype, device, requires_grad)
    if meta is not None:
        return meta
    n = int(np.prod(sz, dtype=np.int64))
    arr = _stream.cast(_stream.integers(_random.get(generator), n, int(low), int(high)), int_dtype).reshape(sz)
    return _finish(arr, dtype, device, requires_grad)


def _like_layout(input, dtype, device, requires_grad, draw):
    """torch's ``empty_like(input)`` then a fill, for a transposed (dense, not C-contiguous)
    host input: the result keeps the input's strides and is drawn in memory order (a normal
    draw then takes the strided kernel's serial path). None for every other input."""
    a = input.array
    if device is not None or not isinstance(a, np.ndarray) or a.flags.c_contiguous or not _stream.dense_permuted(a):
        return None
    np_dtype = _like(input, dtype).np
    out = _stream.like(a, np_dtype)
    _stream.fill(out, _stream.cast(np.asarray(draw(out.size, np_dtype)), np_dtype))
    return _finish(out, None, input.device, requires_grad)


def _layout_template(input: Tensor, memory_format) -> Tensor:
    """What a ``*_like`` draw lays its result out like: ``input`` itself (``preserve_format``),
    or, for an explicit format, a host array of its shape in that format (torch makes
    ``empty_like(input, memory_format=...)`` and fills it in memory order; a row-major one
    draws as a plain ``rand``/``randn``). Other arrays (device, meta) are laid out after the
    draw by the caller."""
    if memory_format is None or memory_format.name == "preserve_format" or not isinstance(input.array, np.ndarray):
        return input
    check_memory_format("empty_like", memory_format, input.ndim)
    return _wrap(in_memory_format(np.empty(input.array.shape, input.array.dtype), memory_format))


@register("rand_like")
def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None, generator=None):
    check_factory_options("rand_like", layout, memory_format=memory_format)
    gen = _random.get(generator)
    explicit = memory_format is not None and memory_format.name != "preserve_format"
    laid = _like_layout(_layout_template(input, memory_format), dtype, device, requires_grad,
                        lambda n, dt: _stream.uniform(gen, n, 0.0, 1.0, dt))
    if laid is not None:
        return laid
    out = rand(*input.shape, dtype=_like(input, dtype), generator=generator, device=device or input.device,
                requires_grad=requires_grad)
    return _laid_out_like(out, input, memory_format) if explicit else out


@register("randn_like")
def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None, generator=None):
    check_factory_options("randn_like", layout, memory_format=memory_format)
    gen = _random.get(generator)
    explicit = memory_format is not None and memory_format.name != "preserve_format"
    laid = _like_layout(_layout_template(input, memory_format), dtype, device, requires_grad,
                        lambda n, dt: _stream.normal(gen, n, 0.0, 1.0, dt, contiguous=False))
    if laid is not None:
        return laid
    out = randn(*input.shape, dtype=_like(input, dtype), generator=generator, device=device or input.device,
                 requires_grad=requires_grad)
    return _laid_out_like(out, input, memory_format) if explicit else out


@register("randint_like")
def randint_like(input, low, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,
                 memory_format=None, generator=None):
    check_factory_options("randint_like", layout, memory_format=memory_format)
    return randint(low, high, tuple(input.shape), dtype=_like(input, dtype), generator=generator,
                   device=device or input.device, requires_grad=requires_grad)


@register("randperm")
def randperm(n, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False) -> Tensor:
    """torch's shuffle on its stream: ``z = random() % (n - i)``, swap ``i`` and ``i + z``."""
    check_factory_options("randperm", layout, pin_memory)
    arr = _stream.permutation(_random.get(generator), int(n))
    arr = _stream.cast(arr, (as_dtype(dtype) if dtype else dtypes.int64).np)
    return _finish(arr, dtype, device, requires_grad)


class _StdOmitted:
    """``normal``'s ``std`` left out (torch: 1 for a tensor mean; ``std=None`` is a TypeError)."""

    def __repr__(self):
        return "1.0"


_STD_OMITTED = _StdOmitted()


@register("normal")
def normal(mean, std=_STD_OMITTED, size=None, *, generator=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False) -> Tensor:
    """torch's three forms: numbers (``empty(size).normal_(mean, std)``; only this form takes
    the factory keywords ``dtype``/``layout``/``device``/``pin_memory``/``requires_grad``, as
    in torch: d2l.ai's ``torch.normal(0, 0.01, size=(2, 1), requires_grad=True)``), a tensor mean
    (``normal_(0, std) + mean``; ``std`` defaults to 1 there only, as in torch:
    ``torch.normal(torch.zeros(n))`` is the old tutorials' noise), a tensor std
    (``normal_(0, 1) * std + mean``). Drawn on the host (one generator for every device),
    returned where mean/std live."""
    if std is None:
        raise TypeError("normal(): std must be a number or a Tensor, not NoneType (leave it out for 1 with a "
                        "tensor mean)")
    if std is _STD_OMITTED:
        if not isinstance(mean, Tensor):
            raise TypeError(f"normal(): argument 'mean' (position 1) must be Tensor, not {type(mean).__name__} "
                            "(std may be left out only with a tensor mean; give std, and size for numbers)")
        std = 1.0
    factory = {k: v for k, v in (("dtype", dtype), ("layout", layout), ("device", device),
                                 ("pin_memory", pin_memory or None), ("requires_grad", requires_grad or None))
               if v is not None}
    if factory and (isinstance(mean, Tensor) or isinstance(std, Tensor) or size is None):
        raise TypeError(f"normal() got {', '.join(factory)}: the factory keywords (dtype, layout, device, "
                        "pin_memory, requires_grad) go only with numbers for mean and std and a size, "
                        "normal(mean, std, size, ...), as in torch; for tensor mean/std set them on the result "
                        "(.to(dtype), .requires_grad_())")
    check_factory_options("normal", layout, pin_memory)
    if dtype is not None and not as_dtype(dtype).is_floating_point:
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for {as_dtype(dtype)}: normal() draws '
                                  "floating-point numbers; give a float dtype and convert the result")
    dev = next((t.device for t in (mean, std) if isinstance(t, Tensor)), CPU)
    m = to_device(mean.array, CPU) if isinstance(mean, Tensor) else mean
    s = to_device(std.array, CPU) if isinstance(std, Tensor) else std
    if isinstance(std, Tensor) and std.array.size and float(np.min(s)) < 0 or not isinstance(std, Tensor) and s < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(np.min(s))}")
    tensors = [a for a in (m, s) if isinstance(a, np.ndarray)]
    np_dtype = np.result_type(*tensors) if tensors else _float(dtype).np
    shape = _size((size,)) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    n = int(np.prod(shape, dtype=np.int64))
    gen = _random.get(generator)
    if not tensors:
        arr = _stream.cast(_stream.normal(gen, n, float(m), float(s), np_dtype), np_dtype).reshape(shape)
    elif not isinstance(std, Tensor):  # normal_(0, std), then + mean
        arr = _stream.cast(_stream.normal(gen, n, 0.0, float(s), np_dtype), np_dtype).reshape(shape)
        arr = (arr + np.asarray(m, dtype=np_dtype)).astype(np_dtype)
    else:  # normal_(0, 1), then * std + mean (two roundings, as torch's mul_ and add_)
        arr = _stream.cast(_stream.normal(gen, n, 0.0, 1.0, np_dtype), np_dtype).reshape(shape)
        arr = (arr * np.asarray(s, dtype=np_dtype)).astype(np_dtype)
        arr = (arr + np.asarray(m, dtype=np_dtype)).astype(np_dtype)
    return _finish(arr, None, device if device is not None else dev, requires_grad)


@register("bernoulli")
def bernoulli(input: Tensor, p=None, *, generator=None) -> Tensor:
    """A 0/1 draw per element: with probability ``input`` (``uniform < p`` on torch's stream:
    24-bit uniforms for float32 probabilities, 53-bit for float64), or the number ``p``."""
    gen = _random.get(generator)
    probs = to_device(input.array, CPU)
    if p is None:
        _check_probabilities(probs)
        draws = _stream.bernoulli_of(gen, probs)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        draws = _stream.bernoulli(gen, probs.size, float(p)).reshape(probs.shape)
    return _wrap(to_device(_stream.cast(draws.astype(np.float32), input.array.dtype), input.device))


def _check_probabilities(probs: np.ndarray) -> None:
    """torch's RuntimeError for a probability tensor with an entry outside [0, 1] or NaN (its
    kernel checks each element; a comparison with the uniform draw would silently give 1 for
    p > 1 and 0 for p < 0 or NaN)."""
    if probs.size and not bool(np.all((probs >= 0) & (probs <= 1))):
        bad = probs[~((probs >= 0) & (probs <= 1))].reshape(-1)[0]
        raise RuntimeError(f"Expected p_in >= 0 && p_in <= 1 to be true, but got false: a probability is {float(bad):g}; "
                           f"clamp the probabilities to [0, 1] (e.g. .clamp(0, 1)) or pass sigmoid/softmax outputs")


def _draw_into(t: Tensor, draw) -> Tensor:
    """Fill ``t`` in place with ``draw(out)`` (``random_stream.draw_into``) and bump its
    version (the callers skip meta tensors before drawing them)."""
    t._check_inplace_allowed("an in-place random fill")
    _stream.draw_into(t.array, draw)
    t._version_counter[0] += 1
    return t


def _fill_random(t: Tensor, values) -> Tensor:
    """Write ``values`` (flat, in the order torch's kernel visits ``t``: memory order)."""
    return _draw_into(t, lambda out: values)


def _contiguous(t: Tensor) -> bool:
    return bool(t.array.flags.c_contiguous)


@register("normal_")
def normal_(t: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if is_meta_array(t.array):  # no data: nothing to fill, nothing drawn
        return t
    gen, n, dt, contiguous = _random.get(generator), t.array.size, t.array.dtype, _contiguous(t)
    if _complex_host(t):  # through view_as_real, as torch
        return _draw_parts(t, lambda flat: _stream.normal(gen, flat.size, float(mean), _complex_std(t.array, float(std)),
                                                          flat.dtype, True, flat))
    return _draw_into(t, lambda out: _stream.normal(gen, n, float(mean), float(std), dt, contiguous, out))


@register("uniform_")
def uniform_(t: Tensor, a=0.0, b=1.0, *, generator=None) -> Tensor:
    if not a <= b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    if is_meta_array(t.array):
        return t
    gen, n, dt = _random.get(generator), t.array.size, t.array.dtype
    if _complex_host(t):  # through view_as_real, as torch
        return _draw_parts(t, lambda flat: _stream.uniform(gen, flat.size, a, b, flat.dtype, flat))
    return _draw_into(t, lambda out: _stream.uniform(gen, n, a, b, dt, out))


def _complex_host(t: Tensor) -> bool:
    """A C-contiguous complex host tensor: filled through its real and imaginary parts."""
    a = t.array
    return a.dtype.kind == "c" and isinstance(a, np.ndarray) and a.flags.c_contiguous


def _draw_parts(t: Tensor, draw) -> Tensor:
    """``draw(flat)`` into the interleaved parts of the complex ``t`` (``_real_parts``)."""
    t._check_inplace_allowed("an in-place random fill")
    draw(_real_parts(t.array))
    t._version_counter[0] += 1
    return t


@register("bernoulli_")
def bernoulli_(t: Tensor, p=0.5, *, generator=None) -> Tensor:
    if is_meta_array(t.array):
        return t
    gen = _random.get(generator)
    if isinstance(p, Tensor):  # a probability per element (broadcast to t)
        probs = np.broadcast_to(to_device(p.array, CPU), t.array.shape)
        _check_probabilities(probs)
        return _fill_random(t, _stream.bernoulli_of(gen, probs).reshape(-1).astype(np.float32))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill_random(t, _stream.bernoulli(gen, t.array.size, p).astype(np.float32))


@register("exponential_")
def exponential_(t: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    if is_meta_array(t.array):
        return t
    return _fill_random(t, _stream.exponential(_random.get(generator), t.array.size, lambd))


@register("random_")
def random_(t: Tensor, low=None, high=None, *, to=None, generator=None) -> Tensor:
    """torch's three forms: ``random_()`` (the dtype's whole integer range: ``[0, 2^63)`` for
    int64, ``[0, 2^24]`` for float32, ...), ``random_(to)`` (``[0, to)``) and
    ``random_(from, to)``."""
    if to is not None:
        low, high = (0 if low is None else low), to
    elif high is None and low is not None:
        low, high = 0, low
    if is_meta_array(t.array):
        return t
    gen = _random.get(generator)
    if low is None:
        return _fill_random(t, _stream.full_range(gen, t.array.size, t.array.dtype))
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return _fill_random(t, _stream.integers(gen, t.array.size, int(low), int(high)))



