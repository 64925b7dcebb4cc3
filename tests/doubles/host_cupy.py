"""A CuPy stand-in whose "device" arrays live in host memory: the CUDA code paths, tested
without a GPU.

CuPy's arrays are not NumPy arrays, and most bugs of a first GPU run are places where code
forgets that: a NumPy array made inside an op and mixed with a device array, ``np.asarray``
of a device array, a NumPy function CuPy does not have, a Numba kernel handed a device
array, a Python scalar expected where CuPy returns a 0-d array. This module reproduces
those behaviours of CuPy 14 on the CPU:

* :class:`ndarray` holds a NumPy array (``_host``) and is *not* an ``np.ndarray``.
  ``np.asarray(x)`` raises CuPy's TypeError ("Implicit conversion to a NumPy array is not
  allowed"); ``x.get()`` and :func:`asnumpy` copy to the host.
* NumPy's ufuncs and functions called on it dispatch here (``__array_ufunc__``,
  ``__array_function__``), as they dispatch to CuPy, and only for the names CuPy has
  (:mod:`cupy_names`, taken from CuPy's own import). A NumPy array operand raises CuPy's
  ``TypeError: Unsupported type``: CuPy copies nothing from the host implicitly. Python and
  NumPy scalars are accepted; indices and ``x[...] = value`` accept NumPy arrays, as CuPy's do.
* Reductions, ufuncs on 0-d arrays and ``x[i]`` return 0-d device arrays, never scalars.
* ``cuda.Device``, ``cuda.runtime`` (one device, which every rank shares),
  ``cuda.Event``, ``get_default_memory_pool()``, ``random``, ``linalg``, ``fft`` and
  ``lib.stride_tricks``, limited to CuPy's names. NCCL is not here: ``fake_nccl`` stands in
  for it (``fake_nccl.HostCudaAPI``, given to the NCCL communicator), so that
  ``init_process_group("nccl")`` and DDP run on host memory too.

It cannot check CUDA kernels, streams, asynchrony, the precision of CuPy's own kernels or
device memory: ``tests/gpu`` does that on a GPU. Install it with ``host_cuda.install()`` (in
a rank script) or ``host_cuda.installed()`` (the tests' ``host_cuda`` fixture), which also
give the NCCL communicator the fake NCCL; ``device="cuda"`` then runs here.
"""

from __future__ import annotations

import copy as _copy
import operator
import types

import ml_dtypes
import numpy as np

from . import cupy_names as names

__version__ = f"{names.CUPY_VERSION}+host"

_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
             "construct a NumPy array explicitly.")
_SCALARS = (bool, int, float, complex, np.generic)


def _unsupported(x) -> TypeError:
    return TypeError(f"Unsupported type {type(x)}")


def _device(x, *, host_ok: bool = False):
    """The host array behind each device operand (in lists, tuples and dicts too). A NumPy
    array raises unless ``host_ok`` (CuPy's creation functions, indices, assigned values)."""
    if type(x) is ndarray:
        return x._host
    if isinstance(x, np.ndarray):
        if host_ok:
            return x
        raise _unsupported(x)
    if type(x) is list:
        return [_device(v, host_ok=host_ok) for v in x]
    if type(x) is tuple:
        return tuple(_device(v, host_ok=host_ok) for v in x)
    if type(x) is dict:
        return {k: _device(v, host_ok=host_ok) for k, v in x.items()}
    return x


def _known(*objs) -> list:
    """The device arrays among ``objs`` (one level into lists/tuples/dicts): a result that is
    one of their host arrays is returned as that very object, as CuPy returns ``out``."""
    found = []
    for o in objs:
        if type(o) is ndarray:
            found.append(o)
        elif type(o) in (list, tuple):
            found.extend(v for v in o if type(v) is ndarray)
        elif type(o) is dict:
            found.extend(_known(*o.values()))
    return found


def _wrap(r, known=()):
    if isinstance(r, np.ndarray):
        for k in known:
            if k._host is r:
                return k
        return ndarray._from_host(r)
    if isinstance(r, np.generic):
        return ndarray._from_host(np.asarray(r))
    if type(r) is list:
        return [_wrap(v, known) for v in r]
    if isinstance(r, tuple):
        vals = [_wrap(v, known) for v in r]
        return type(r)(*vals) if hasattr(r, "_fields") else tuple(vals)
    return r


def _check_dtype(dt: np.dtype) -> None:
    if dt.kind in "OSUMm" or (dt.kind == "V" and dt != ml_dtypes.bfloat16):
        raise ValueError(f"Unsupported dtype {dt}")


class _Flags:
    """CuPy's ``ndarray.flags``: contiguity and ownership only (no ``writeable``: every
    device array can be written, and code that asks must not assume NumPy's flags)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, host_flags):
        self.c_contiguous = host_flags.c_contiguous
        self.f_contiguous = host_flags.f_contiguous
        self.owndata = host_flags.owndata

    def __getitem__(self, name):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "OWNDATA": "owndata"}[name])


class ndarray:
    """A device array (host memory behind it): CuPy's attributes and methods, NumPy's math."""

    __slots__ = ("_host", "__weakref__")
    __hash__ = None

    def __init__(self, shape, dtype=float, order="C"):
        host = np.empty(shape, dtype=dtype, order=order)
        _check_dtype(host.dtype)
        self._host = host

    @classmethod
    def _from_host(cls, host: np.ndarray) -> ndarray:
        _check_dtype(host.dtype)
        self = object.__new__(cls)
        self._host = host
        return self

    # ---- attributes --------------------------------------------------------------------
    shape = property(lambda self: self._host.shape)
    dtype = property(lambda self: self._host.dtype)
    ndim = property(lambda self: self._host.ndim)
    size = property(lambda self: self._host.size)
    itemsize = property(lambda self: self._host.itemsize)
    nbytes = property(lambda self: self._host.nbytes)
    strides = property(lambda self: self._host.strides)
    flags = property(lambda self: _Flags(self._host.flags))
    T = property(lambda self: ndarray._from_host(self._host.T))
    mT = property(lambda self: ndarray._from_host(np.swapaxes(self._host, -1, -2)))
    real = property(lambda self: ndarray._from_host(self._host.real))
    imag = property(lambda self: ndarray._from_host(self._host.imag))
    device = property(lambda self: cuda.Device(0))

    @shape.setter
    def shape(self, value):
        self._host.shape = value

    @property
    def base(self):
        b = self._host.base
        return ndarray._from_host(b) if isinstance(b, np.ndarray) else None

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self._host.ctypes.data, mem=None, device_id=0)

    # ---- the host boundary ---------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def get(self, stream=None, order="C", out=None, blocking=True):
        if out is not None:
            out[...] = self._host
            return out
        return np.array(self._host, order=order, copy=True)

    def set(self, arr, stream=None):
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        self._host[...] = arr

    def item(self, *args):
        return self._host.item(*args)

    def tolist(self):
        return self._host.tolist()

    def tobytes(self, order="C"):
        return self._host.tobytes(order)

    # ---- NumPy's dispatch, as CuPy implements it -------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = ufunc.__name__
        operands = inputs if method != "at" else inputs[:1] + inputs[2:]  # indices may be NumPy's
        for x in operands + tuple(kwargs.get("out", ()) or ()):
            if not (type(x) is ndarray or isinstance(x, (np.ndarray, *_SCALARS))):
                return NotImplemented
        if name in names.UFUNCS:
            return getattr(_Ufunc(ufunc), method)(*inputs, **kwargs)
        if name in names.MODULE and method == "__call__":  # matmul: a function in CuPy
            return _Function(ufunc, name)(*inputs, **kwargs)
        return NotImplemented

    def __array_function__(self, func, types_, args, kwargs):
        namespace = _NAMESPACE_OF.get(func.__module__, names.MODULE)
        if func.__name__ not in namespace:
            return NotImplemented
        for t in types_:
            if t is not ndarray and not issubclass(t, np.ndarray):
                return NotImplemented
        return _Function(func, func.__name__)(*args, **kwargs)

    # ---- Python protocols ------------------------------------------------------------
    def __len__(self):
        return len(self._host)

    def __iter__(self):
        if self._host.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (ndarray._from_host(np.asarray(self._host[i])) for i in range(len(self._host)))

    def __bool__(self):
        return bool(self._host)

    def __int__(self):
        return int(self._host)

    def __float__(self):
        return float(self._host)

    def __complex__(self):
        return complex(self._host)

    def __format__(self, spec):
        return format(self._host, spec) if self._host.ndim == 0 else format(str(self), spec)

    def __repr__(self):
        return repr(self._host)

    def __str__(self):
        return str(self._host)

    def __copy__(self):
        return ndarray._from_host(self._host.copy())

    def __deepcopy__(self, memo):
        return ndarray._from_host(_copy.deepcopy(self._host, memo))

    def __reduce__(self):
        return ndarray._from_host, (self._host.copy(),)

    def __getitem__(self, key):
        return _wrap(self._host[_device(key, host_ok=True)], (self,))

    def __setitem__(self, key, value):
        self._host[_device(key, host_ok=True)] = _device(value, host_ok=True)

    def scatter_add(self, slices, value):
        np.add.at(self._host, _device(slices, host_ok=True), _device(value))


def _operand(x):
    if type(x) is ndarray:
        return x._host
    if isinstance(x, np.ndarray):
        raise _unsupported(x)
    if isinstance(x, _SCALARS):
        return x
    return NotImplemented


def _binary(fn, reflected=False):
    def op(self, other):
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        r = fn(o, self._host) if reflected else fn(self._host, o)
        return _wrap(r)
    return op


def _inplace(fn):
    def op(self, other):
        o = _operand(other)
        if o is NotImplemented:
            return NotImplemented
        fn(self._host, o, out=self._host)
        return self
    return op


for _name, _fn in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
                   "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
                   "matmul": np.matmul, "and": np.bitwise_and, "or": np.bitwise_or,
                   "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift,
                   "divmod": np.divmod}.items():
    setattr(ndarray, f"__{_name}__", _binary(_fn))
    setattr(ndarray, f"__r{_name}__", _binary(_fn, reflected=True))
    if _name not in ("divmod", "matmul"):
        setattr(ndarray, f"__i{_name}__", _inplace(_fn))
for _name, _fn in {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                   "gt": np.greater, "ge": np.greater_equal}.items():
    setattr(ndarray, f"__{_name}__", _binary(_fn))
for _name, _fn in {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
                   "invert": operator.invert}.items():
    setattr(ndarray, f"__{_name}__", (lambda f: lambda self: _wrap(f(self._host)))(_fn))


def _method(name):
    def m(self, *args, **kwargs):
        known = [self, *_known(args, kwargs)]
        return _wrap(getattr(self._host, name)(*_device(args), **_device(kwargs)), known)
    m.__name__ = name
    return m


for _name in sorted(names.NDARRAY):
    if not _name.startswith("_") and _name not in ndarray.__dict__ and hasattr(np.ndarray, _name):
        if callable(getattr(np.ndarray, _name)):
            setattr(ndarray, _name, _method(_name))


class _Function:
    """A NumPy function as CuPy's: device operands in, device arrays out (``host_ok`` for the
    functions that copy from the host: ``array``, ``asarray``, ``asanyarray``)."""

    __slots__ = ("_f", "__name__", "_host_ok")

    def __init__(self, f, name, host_ok=False):
        self._f, self.__name__, self._host_ok = f, name, host_ok

    def __call__(self, *args, **kwargs):
        known = _known(args, kwargs)
        if self._host_ok and args and isinstance(args[0], np.ndarray):
            # CuPy copies host data to the device: a device array never shares a NumPy array's memory
            args = (np.array(args[0], copy=True), *args[1:])
        r = self._f(*_device(args, host_ok=self._host_ok), **_device(kwargs, host_ok=self._host_ok))
        return _wrap(r, known)


_SCATTER_DTYPES = {
    "add": ("int32", "int64", "float16", "float32", "float64", "uint32", "uint64"),
    "maximum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
    "minimum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
}


class _Ufunc:
    """A NumPy ufunc as CuPy's: its call and its ``reduce``/``accumulate``/``outer``/``at``."""

    __slots__ = ("_u",)

    def __init__(self, u):
        self._u = u

    def __getattr__(self, name):  # nin, nout, nargs, types, identity
        return getattr(self._u, name)

    @property
    def __name__(self):
        return self._u.__name__

    def _run(self, method, args, kwargs):
        known = _known(args, kwargs)
        out = getattr(self._u, method)(*_device(args), **_device(kwargs))
        return _wrap(out, known)

    def __call__(self, *args, **kwargs):
        return self._run("__call__", args, kwargs)

    def _only(self, method, supported):
        # CuPy 14's ufunc methods exist for a few ufuncs only (cupy/_core/_kernel.pyx); the
        # others raise this NotImplementedError, which a GPU run met first (session 24)
        if self._u.__name__ not in supported:
            raise NotImplementedError(f"`cupy_{self._u.__name__}.{method}` is not supported yet")

    def reduce(self, *args, **kwargs):
        self._only("reduce", ("add", "multiply"))
        return self._run("reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        self._only("accumulate", ("add", "multiply"))
        return self._run("accumulate", args, kwargs)

    def reduceat(self, *args, **kwargs):
        self._only("reduceat", ("add",))
        return self._run("reduceat", args, kwargs)

    def outer(self, *args, **kwargs):
        return self._run("outer", args, kwargs)

    def at(self, a, indices, b=None):
        if type(a) is not ndarray:
            raise _unsupported(a)
        # the ufuncs CuPy gives a scatter op (``_scatter_op``): add, max, min and the bitwise ones
        self._only("at", ("add", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor"))
        # and their kernels take a few dtypes only (_scatter_op_single); an H200 met it (session 30)
        kinds = _SCATTER_DTYPES.get(self._u.__name__)
        if kinds is not None and a.dtype.name not in kinds:
            raise TypeError(f"cupy.{self._u.__name__}.at only supports {', '.join(kinds)} as data type")
        idx = _device(indices, host_ok=True)
        if b is None:
            self._u.at(a._host, idx)
        else:
            self._u.at(a._host, idx, _device(b))


class _Namespace(types.ModuleType):
    """A NumPy submodule limited to the names its CuPy counterpart has."""

    def __init__(self, name, numpy_module, allowed, extra=None):
        super().__init__(f"host_cupy.{name}")
        self._numpy, self._allowed, self._label = numpy_module, allowed, name
        for k, v in (extra or {}).items():
            setattr(self, k, v)

    def __getattr__(self, name):
        if name.startswith("__") or name not in self._allowed:
            raise AttributeError(f"module 'cupy.{self._label}' has no attribute {name!r}")
        value = getattr(self._numpy, name)
        wrapped = _Function(value, name) if callable(value) and not isinstance(value, type) else value
        setattr(self, name, wrapped)
        return wrapped


class _Generator:
    """``cupy.random.Generator``: NumPy's, limited to CuPy's methods, device arrays out."""

    def __init__(self, rng: np.random.Generator):
        self._rng = rng

    def __getattr__(self, name):
        if name.startswith("_") or name not in names.GENERATOR:
            raise AttributeError(f"'cupy.random.Generator' object has no attribute {name!r}")
        return _Function(getattr(self._rng, name), name)


def _default_rng(seed=None):
    return _Generator(np.random.default_rng(seed))


random = _Namespace("random", np.random, names.RANDOM, {"default_rng": _default_rng})
linalg = _Namespace("linalg", np.linalg, names.LINALG)
fft = _Namespace("fft", np.fft, names.FFT)
lib = types.SimpleNamespace(stride_tricks=_Namespace("lib.stride_tricks", np.lib.stride_tricks,
                                                     names.STRIDE_TRICKS))
_NAMESPACE_OF = {"numpy.linalg": names.LINALG, "numpy.fft": names.FFT, "numpy.random": names.RANDOM,
                 "numpy.lib.stride_tricks": names.STRIDE_TRICKS,
                 "numpy.lib._stride_tricks_impl": names.STRIDE_TRICKS}


# ---- cupy.cuda: one device ---------------------------------------------------------------
class CUDARuntimeError(RuntimeError):
    pass


class _DeviceContext:
    """``cupy.cuda.Device(i)``: device 0 only; a context manager that makes it current."""

    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise CUDARuntimeError("cudaErrorInvalidDevice: invalid device ordinal")

    compute_capability = "90"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return None

    def synchronize(self):
        return None

    def __eq__(self, other):
        return isinstance(other, _DeviceContext) and other.id == self.id

    __hash__ = object.__hash__


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDevice():
        return 0

    @staticmethod
    def setDevice(i):
        _DeviceContext(i)

    @staticmethod
    def getDeviceProperties(i):
        _DeviceContext(i)
        return {"name": b"host_cupy (host memory standing in for a GPU)", "major": 9, "minor": 0,
                "totalGlobalMem": 16 << 30, "multiProcessorCount": 1}

    @staticmethod
    def memGetInfo():
        return 16 << 30, 16 << 30

    @staticmethod
    def runtimeGetVersion():
        return 12080

    @staticmethod
    def driverGetVersion():
        return 12080


class _Stream:
    def __init__(self, non_blocking=False, null=False, ptr=None):
        self.ptr = 0 if ptr is None else ptr

    def synchronize(self):
        return None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        return self


class _EventStandIn:
    """``cupy.cuda.Event``: work is synchronous here, so an event is done once recorded."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.done = True

    def record(self, stream=None):
        self.done = True

    def synchronize(self):
        return None


class _CudaNamespace(types.SimpleNamespace):
    """``cupy.cuda`` (without ``nccl``: see the module docstring)."""

    def __getattr__(self, name):
        raise AttributeError(f"module 'cupy.cuda' has no attribute {name!r}")


class _MemoryPool:
    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def free_all_blocks(self):
        return None

    def n_free_blocks(self):
        return 0

    def set_limit(self, size=None, fraction=None):
        return None


_POOL, _PINNED_POOL = _MemoryPool(), _MemoryPool()
cuda = _CudaNamespace(Device=_DeviceContext, runtime=_Runtime, Stream=_Stream, Event=_EventStandIn,
                     get_current_stream=lambda device=None: _Stream(null=True),
                     CUDARuntimeError=CUDARuntimeError, is_available=lambda: True)


def get_default_memory_pool():
    return _POOL


def get_default_pinned_memory_pool():
    return _PINNED_POOL


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if type(a) is ndarray:
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def get_array_module(*args):
    return _this if any(type(a) is ndarray for a in args) else np


def fuse(*args, **kwargs):
    """``cupy.fuse``: the plain function (fusion is CuPy's kernel business, not checked here)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


_FROM_HOST = {"array", "asarray", "asanyarray"}
_cache: dict = {}


def __getattr__(name):
    if name in _cache:
        return _cache[name]
    if name.startswith("__") or name not in names.MODULE:
        raise AttributeError(f"module 'cupy' has no attribute {name!r}")
    if not hasattr(np, name):
        raise AttributeError(f"host_cupy has no stand-in for cupy.{name} (CuPy-only; add one)")
    value = getattr(np, name)
    if isinstance(value, np.ufunc) and name in names.UFUNCS:
        value = _Ufunc(value)
    elif callable(value) and not isinstance(value, type):
        value = _Function(value, name, host_ok=name in _FROM_HOST)
    _cache[name] = value
    return value


import sys as _sys  # noqa: E402  (the module object, for get_array_module)

_this = _sys.modules[__name__]
