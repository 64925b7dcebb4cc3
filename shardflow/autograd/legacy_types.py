"""PyTorch's legacy tensor types: ``FloatTensor``, ``LongTensor``, ... and ``cuda.FloatTensor``.

Old PyTorch code still uses them three ways, all supported:

* as constructors: ``FloatTensor(2, 3)`` / ``FloatTensor(Size([2, 3]))`` (uninitialised, that
  shape), ``FloatTensor([1, 2])`` / ``FloatTensor(ndarray)`` (the data, converted to the
  type's dtype), ``FloatTensor()`` (empty); a Tensor of the type's dtype is returned as a
  Tensor sharing its memory, of another dtype refused (PyTorch's TypeError);
* in ``isinstance(x, FloatTensor)``: true for a Tensor of that dtype on that device type (a
  type is a metaclass instance, not a Tensor subclass, as in PyTorch:
  ``issubclass(FloatTensor, Tensor)`` is False);
* as names of a dtype and device: ``x.type(FloatTensor)``, ``x.type('torch.cuda.FloatTensor')``
  and ``x.type()``, which returns PyTorch's string (``'torch.FloatTensor'``,
  ``'torch.cuda.LongTensor'``) so that comparisons with those literals hold;
  ``set_default_tensor_type``.

``tensor_type_name`` and ``resolve_tensor_type`` serve ``Tensor.type``; ``uninitialized`` is
``Tensor(*sizes)``, the ``torch.Tensor`` constructor's legacy sizes form.
"""

from __future__ import annotations

import numpy as np

from ..backend import as_dtype, dtypes, set_default_device, set_default_dtype, to_device
from ..backend import device as _device
from ..backend import storage as _storage
from ..backend.user_warning import warn_at_caller
from . import sequence_data

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
           "ShortTensor", "IntTensor", "LongTensor", "BoolTensor", "set_default_tensor_type",
           "CUDA_TYPES"]

_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
          "bfloat16": "BFloat16Tensor", "uint8": "ByteTensor", "int8": "CharTensor",
          "int16": "ShortTensor", "int32": "IntTensor", "int64": "LongTensor", "bool": "BoolTensor"}
_BY_NAME = {v: k for k, v in _NAMES.items()}


def _size(s, what: str) -> int:
    """One size as torch's ``new()`` reads it: an int, a bool (as 0 / 1), a NumPy integer, or
    a one-element integer Tensor (NVIDIA tacotron2's ``LongTensor(len(batch),
    max_input_len)`` with ``max_input_len = input_lengths[0]``); floats are refused."""
    from .tensor import Tensor

    if type(s) is int:
        return s
    if isinstance(s, (bool, np.bool_, np.integer)):
        return int(s)
    if isinstance(s, Tensor) and s.numel() == 1 and s.dtype.np.kind in "iu":
        return int(s.item())
    raise TypeError(f"{what}: sizes must be ints, got {type(s).__name__} ({s!r})")


def _sizes(args, what: str) -> tuple:
    shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], tuple) else tuple(args)
    shape = tuple(_size(s, what) for s in shape)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    return shape


def user_array(data: np.ndarray):
    """``torch.Tensor(ndarray)`` from a program: ``(array, dtype)`` for the constructor.
    The legacy constructor makes a tensor of the default dtype whatever the array's dtype
    (gym's float64 observations and bool ``done`` flags become float32, as CleanRL's
    ``torch.Tensor(next_obs)`` / ``torch.Tensor(next_done)`` rely on); an array already of
    that dtype is shared, not copied, as torch's. A complex array loses its imaginary part
    with torch's warning; an array that is not numbers (strings, objects) is left to the
    constructor's TypeError."""
    kind = data.dtype.kind
    if kind not in "biufc":
        return data, None
    if kind == "c":
        warn_at_caller("Casting complex values to real discards the imaginary part")
        data = data.real
    return data, dtypes.get_default_dtype()


def uninitialized(data, sizes, dtype) -> np.ndarray:
    """``Tensor(2, 3)`` / ``Tensor(3)`` / ``Tensor(Size([2, 3]))``: an uninitialised array of
    those sizes and ``dtype`` (the default dtype when None), as ``torch.Tensor``'s legacy
    constructor. (``Tensor([1, 2])``, data, is a tensor of the default dtype.)"""
    npd = (as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()).np
    return np.empty(_sizes((data, *sizes), "Tensor()"), npd)


class tensortype(type):
    """The type of ``FloatTensor`` etc.: calling it constructs, ``isinstance`` checks dtype
    and device type."""

    dtype: dtypes.dtype
    is_cuda: bool

    def __instancecheck__(cls, obj) -> bool:
        from .tensor import Tensor

        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and (obj.device.type == "cuda") == cls.is_cuda)

    def __call__(cls, *args, device=None):
        from .tensor import Size, Tensor, _nested

        npd = cls.dtype.np
        if not args:
            arr = np.empty((0,), npd)
        elif len(args) > 1 or type(args[0]) is int or isinstance(args[0], Size):
            arr = np.empty(_sizes(args, cls.__name__), npd)
        elif isinstance(args[0], Tensor):
            t = args[0]
            if t.dtype is not cls.dtype:
                raise TypeError(f"{cls.__name__}(): expected a {cls.dtype} tensor (got {t.dtype}); "
                                f"convert it with t.to({cls.dtype})")
            return t.detach()
        elif _storage.is_storage(args[0]):  # FloatTensor(storage) views it, as torch
            arr = _storage.typed_view(args[0], cls.dtype)
        elif isinstance(args[0], float):
            raise TypeError(f"new(): data must be a sequence (got float); use shardflow.tensor({args[0]}, dtype={cls.dtype})")
        else:
            data = _nested(args[0])  # a Tensor inside a list is one scalar, as in torch
            arr = np.asarray(data).astype(npd) if npd.kind != "V" else (
                np.asarray(data, np.float32).astype(npd))
            if isinstance(args[0], list | tuple):  # torch's warning for a list of ndarrays
                sequence_data.warn_list_of_ndarrays(sequence_data.scan(args[0], Tensor), arr.size)
        dev = _device("cuda") if cls.is_cuda else (_device(device) if device is not None else None)
        if dev is not None and dev.type != "cpu":
            arr = to_device(arr, dev)
        return Tensor(arr)

    def __repr__(cls) -> str:
        return f"<class 'shardflow.{'cuda.' if cls.is_cuda else ''}{cls.__name__}'>"


def _make(dtype_name: str, cuda: bool) -> tensortype:
    name = _NAMES[dtype_name]
    return tensortype(name, (), {"dtype": as_dtype(dtype_name), "is_cuda": cuda,
                                 "__module__": "shardflow.cuda" if cuda else "shardflow",
                                 "__doc__": f"PyTorch's legacy {'CUDA ' if cuda else ''}{name} ({dtype_name})."})


FloatTensor = _make("float32", False)
DoubleTensor = _make("float64", False)
HalfTensor = _make("float16", False)
BFloat16Tensor = _make("bfloat16", False)
ByteTensor = _make("uint8", False)
CharTensor = _make("int8", False)
ShortTensor = _make("int16", False)
IntTensor = _make("int32", False)
LongTensor = _make("int64", False)
BoolTensor = _make("bool", False)

CUDA_TYPES = {_NAMES[d]: _make(d, True) for d in _NAMES}  # shardflow.cuda.FloatTensor ...


def tensor_type_name(t) -> str:
    """PyTorch's ``x.type()``: ``'torch.FloatTensor'``, ``'torch.cuda.LongTensor'``."""
    return f"torch.{'cuda.' if t.device.type == 'cuda' else ''}{_NAMES[t.dtype.name]}"


def resolve_tensor_type(spec):
    """``(dtype, device or None)`` for ``x.type(spec)``: a legacy type, its name as a string
    (``'torch.cuda.FloatTensor'``; ``shardflow.`` spelled the same), or a dtype."""
    if isinstance(spec, tensortype):
        return spec.dtype, _device("cuda") if spec.is_cuda else _device("cpu")
    if isinstance(spec, str):
        parts = spec.split(".")
        if len(parts) in (2, 3) and parts[0] in ("torch", "shardflow") and parts[-1] in _BY_NAME and (
                len(parts) == 2 or parts[1] == "cuda"):
            return as_dtype(_BY_NAME[parts[-1]]), _device("cuda" if len(parts) == 3 else "cpu")
        raise ValueError(f"invalid type: {spec!r}; expected e.g. 'torch.FloatTensor' or 'torch.cuda.LongTensor'")
    return as_dtype(spec), None


def set_default_tensor_type(t) -> None:
    """``torch.set_default_tensor_type``: the default dtype, and CUDA as the default device for
    a ``cuda`` type (PyTorch's deprecated way to say both)."""
    warn_at_caller("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                   "torch.set_default_dtype() and torch.set_default_device() as alternatives.")
    dtype, dev = resolve_tensor_type(t)
    if not dtype.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {t!r}")
    set_default_dtype(dtype)
    set_default_device(dev if dev is not None and dev.type == "cuda" else "cpu")
