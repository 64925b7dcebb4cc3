"""Values on the wire: a restricted encoding of Python values into a JSON tree + buffers.

What can travel (anything else is refused on the sender with a TypeError that says so):

* ``None``, bools, ints, floats, strings (JSON); complex numbers; ``bytes``;
* lists, tuples, dicts (any encodable keys), ``OrderedDict``, sets, frozensets, slices,
  ``Ellipsis``;
* Tensors (and Parameters) and NumPy arrays: raw buffers in the payload, never copied on
  the way out (a non-contiguous one is made contiguous first), received straight into
  their memory; NumPy scalars; shardflow dtypes, devices and ``Size``;
* functions and classes *by reference*: ``"module:qualname"``, resolved on the receiver by
  importing ``module`` and walking ``qualname`` (so a lambda, a nested function or a bound
  method cannot be sent: the sender says so); the receiver accepts only functions, builtins
  and classes there, and no dunder names;
* ``RRef``s (forked per PyTorch's protocol, see ``rref.py``);
* ``nn.Module`` instances (class by reference, state = their attributes encoded by these
  same rules), named tuples and objects of classes registered with :func:`register_class`
  (state from ``__getstate__``, restored into ``cls.__new__(cls)`` with ``__setstate__`` or
  ``__dict__``). The receiver re-creates an object only if its class is registered there
  too (or is a Module subclass): naming a class on the wire is not enough.

Tree tags (a JSON object with one ``"$x"`` key; every Python dict is ``"$d"``, so no plain
object is ambiguous): ``$T`` tensor, ``$A`` ndarray, ``$B`` bytes (buffer index); ``$t``
tuple, ``$d`` dict, ``$o`` OrderedDict, ``$s`` set, ``$f`` frozenset (flat lists); ``$c``
complex, ``$n`` NumPy scalar, ``$y`` dtype, ``$v`` device, ``$z`` Size, ``$l`` slice, ``$e``
Ellipsis; ``$F`` callable, ``$M`` module, ``$C`` registered object, ``$R`` RRef.

A tensor object that appears twice in one message arrives as one tensor (tied weights
stay tied).
"""

from __future__ import annotations

import collections
import importlib
import re
import sys
import types

import numpy as np

from ...autograd.tensor import Size, Tensor, _wrap
from ...backend import device_of
from ...backend.device import device as Device
from ...backend.dtypes import dtype as DType
from ...nn.module import Module
from ...nn.parameter import Parameter
from ..wire_arrays import DTYPES, WireFormatError, wire_dtype
from .errors import RPCProtocolError

__all__ = ["register_class", "Encoder", "Decoder", "values_from", "qualified_name", "resolve"]

FLAG_TENSOR = 1
FLAG_REQUIRES_GRAD = 2
FLAG_PARAMETER = 4

_REGISTERED: set = set()
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def register_class(cls):
    """Allow objects of ``cls`` in RPC arguments and results (usable as a decorator). Both
    the sender and the receiver must have registered it: the receiver re-creates only the
    classes it registered itself."""
    if not isinstance(cls, type):
        raise TypeError(f"register_class expects a class, got {type(cls).__name__}")
    _REGISTERED.add(cls)
    return cls


# ------------------------------------------------------------------------------ names


def qualified_name(obj) -> str:
    """``"module:qualname"`` of a function or class that the receiver can import; TypeError
    (naming the fix) for lambdas, nested functions and bound methods."""
    bound = getattr(obj, "__self__", None)
    if bound is not None and not isinstance(bound, types.ModuleType) and not isinstance(obj, type):
        raise TypeError(
            f"cannot send the bound method {obj!r} over RPC: functions travel by name. Send "
            f"the function {type(bound).__name__}.{obj.__name__} and the object as an "
            "argument, or keep the object on its worker and call it through an RRef")
    module = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None)
    if not module or not qual or "<" in qual:
        raise TypeError(
            f"cannot send {obj!r} over RPC: functions and classes travel by name, and "
            f"{qual or obj!r} is not reachable from its module (a lambda or a function "
            "defined inside another function). Define it at module level")
    try:
        found = _walk(sys.modules.get(module) or importlib.import_module(module), qual)
    except (ImportError, AttributeError):
        found = None
    if found is not obj and getattr(found, "__func__", None) is not obj:
        raise TypeError(
            f"cannot send {obj!r} over RPC: {module}:{qual} does not name it (it was "
            "replaced or created dynamically). Send a module-level function or class")
    return f"{module}:{qual}"


def _walk(root, qual: str):
    obj = root
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def resolve(name, what: str = "function"):
    """The function or class ``"module:qualname"`` names, imported here; RPCProtocolError
    (never execution) for anything else."""
    if not isinstance(name, str) or name.count(":") != 1:
        raise RPCProtocolError(f"malformed {what} reference {name!r}")
    module, qual = name.split(":")
    if not _NAME.match(module) or not _NAME.match(qual):
        raise RPCProtocolError(f"malformed {what} reference {name!r}")
    if any(p.startswith("__") and p.endswith("__") for p in qual.split(".")):
        raise RPCProtocolError(f"refused {what} reference {name!r}: dunder names are not callable over RPC")
    try:
        mod = sys.modules.get(module) or importlib.import_module(module)
        obj = _walk(mod, qual)
    except ImportError as e:
        raise RPCProtocolError(
            f"cannot resolve {what} {name}: module {module!r} does not import on this worker "
            f"({e}); the function must live in a module every worker can import") from None
    except AttributeError:
        raise RPCProtocolError(
            f"cannot resolve {what} {name}: {module} has no {qual!r} on this worker (run the "
            "same code on every worker)") from None
    if not isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type,
                            types.MethodDescriptorType, types.WrapperDescriptorType,
                            np.ufunc)) and not _is_async_wrapper(obj):
        raise RPCProtocolError(
            f"refused {what} reference {name!r}: it names a {type(obj).__name__}, not a "
            "function or class")
    return obj


def _is_async_wrapper(obj) -> bool:
    return callable(obj) and getattr(obj, "_shardflow_async_execution", False)


# ------------------------------------------------------------------------------ encode


class Encoder:
    """Encodes one message's values; collects its buffers (``arrays``, ``meta``) and the
    tensors that require grad (distributed autograd records them)."""

    __slots__ = ("arrays", "meta", "grad_tensors", "forks", "_memo", "_keep", "_rref", "_device_map")

    def __init__(self, rref_encoder=None, device_map=None):
        self.arrays: list = []
        self.meta: list = []
        self.grad_tensors: list = []
        self.forks: list = []           # the RRef forks this message made (the agent's)
        self._memo: dict = {}
        self._keep: list = []
        self._rref = rref_encoder
        self._device_map = device_map or {}

    def encode(self, obj):
        t = type(obj)
        if obj is None or t is bool or t is int or t is float or t is str:
            return obj
        if t is list:
            return [self.encode(x) for x in obj]
        if t is tuple:
            return {"$t": [self.encode(x) for x in obj]}
        if t is dict:
            return {"$d": self._pairs(obj)}
        if isinstance(obj, Tensor):
            return {"$T": self._tensor(obj)}
        return self._other(obj, t)

    def _pairs(self, d) -> list:
        out = []
        for k, v in d.items():
            out.append(self.encode(k))
            out.append(self.encode(v))
        return out

    def _other(self, obj, t):
        if t is collections.OrderedDict:
            return {"$o": self._pairs(obj)}
        if t is set or t is frozenset:
            return {"$s" if t is set else "$f": [self.encode(x) for x in obj]}
        if t is Size:
            return {"$z": list(obj)}
        if t is np.ndarray:
            return {"$A": self._buffer(obj, 0)}
        if t is bytes or t is bytearray:
            return {"$B": self._buffer(np.frombuffer(obj, np.uint8), 0)}
        if t is complex:
            return {"$c": [obj.real, obj.imag]}
        if isinstance(obj, np.generic):
            return {"$n": [wire_dtype(obj), obj.item()]}
        if t is DType:
            return {"$y": obj.name if hasattr(obj, "name") else str(obj)}
        if t is Device:
            return {"$v": str(obj)}
        if t is slice:
            return {"$l": [self.encode(obj.start), self.encode(obj.stop), self.encode(obj.step)]}
        if obj is Ellipsis:
            return {"$e": 0}
        if self._rref is not None and getattr(t, "_shardflow_rref", False):
            return {"$R": self._rref(obj)}
        if isinstance(obj, Module) and t not in _REGISTERED:
            return {"$M": qualified_name(t), "s": {"$d": self._pairs(obj.__dict__)}}
        if t in _REGISTERED:
            return self._registered(obj, t)
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)) or _is_async_wrapper(obj):
            return {"$F": qualified_name(obj)}
        if isinstance(obj, types.MethodType):
            qualified_name(obj)  # raises the bound-method explanation
        if isinstance(obj, tuple) and hasattr(t, "_fields"):
            raise TypeError(
                f"cannot send the named tuple {t.__qualname__} over RPC unless its class is "
                "registered: decorate it with @shardflow.distributed.rpc.register_class")
        raise TypeError(
            f"cannot send an object of type {t.__module__}.{t.__qualname__} over RPC. RPC "
            "carries tensors, arrays, numbers, strings, containers, RRefs, functions and "
            "classes (by name), nn.Modules and objects of classes registered with "
            "shardflow.distributed.rpc.register_class; register the class (on every worker) "
            "or send its fields")

    def _registered(self, obj, t):
        name = qualified_name(t)
        if isinstance(obj, tuple) and hasattr(t, "_fields"):
            return {"$C": name, "nt": [self.encode(x) for x in obj]}
        state = obj.__getstate__()
        return {"$C": name, "s": self.encode(state)}

    def _tensor(self, t: Tensor) -> int:
        idx = self._memo.get(id(t))
        if idx is not None:
            return idx
        arr = t.array
        flags = FLAG_TENSOR
        if t.requires_grad:
            flags |= FLAG_REQUIRES_GRAD
            self.grad_tensors.append(t)
        if isinstance(t, Parameter):
            flags |= FLAG_PARAMETER
        dev = device_of(arr)
        if dev.type != "cpu":
            arr = self._host(arr, dev)
        idx = self._buffer(arr, flags)
        self._memo[id(t)] = idx
        self._keep.append(t)  # keeps id(t) unique while this message is encoded
        return idx

    def _host(self, arr, dev):
        if dev not in self._device_map:
            raise TypeError(
                f"cannot send a tensor on {dev} over RPC without a device map for the "
                "destination: set one with options.set_device_map(worker, {local: remote}) "
                "or move the tensor to the CPU first")
        return arr.get()

    def _buffer(self, arr, flags: int) -> int:
        arr = np.ascontiguousarray(arr)
        self.meta.append([wire_dtype(arr), list(arr.shape), 0, flags])
        self.arrays.append(arr)
        return len(self.arrays) - 1


# ------------------------------------------------------------------------------ decode


def values_from(arrays, meta, source=None) -> list:
    """The values for a message's buffers: Tensors for those sent as tensors, the arrays
    for the others. ``source(arrays) -> tensors`` builds the tensors that require grad
    (distributed autograd's recv node); without it they are leaves with the sender's
    ``requires_grad``. Parameters arrive as Parameters (leaves)."""
    out = [None] * len(arrays)
    grad_idx = []
    for i, (arr, m) in enumerate(zip(arrays, meta)):
        flags = int(m[3]) if len(m) > 3 else 0
        if not flags & FLAG_TENSOR:
            out[i] = arr
        elif flags & FLAG_PARAMETER:
            out[i] = Parameter(_wrap(arr), requires_grad=bool(flags & FLAG_REQUIRES_GRAD))
        elif flags & FLAG_REQUIRES_GRAD and arr.dtype.kind in "fV":
            grad_idx.append(i)
        else:
            out[i] = _wrap(arr)
    if grad_idx:
        if source is not None:
            made = source([arrays[i] for i in grad_idx])
        else:
            made = [_wrap(arrays[i], True) for i in grad_idx]
        for i, t in zip(grad_idx, made):
            out[i] = t
    return out


class Decoder:
    """Turns a received tree back into values (buffers already made into ``values``)."""

    __slots__ = ("values", "_rref")

    def __init__(self, values, rref_decoder=None):
        self.values = values
        self._rref = rref_decoder

    def decode(self, node):
        t = type(node)
        if node is None or t is bool or t is int or t is float or t is str:
            return node
        if t is list:
            return [self.decode(x) for x in node]
        if t is not dict or len(node) not in (1, 2):
            raise RPCProtocolError(f"malformed value in an RPC message: {_short(node)}")
        tag = next(iter(node))
        body = node[tag]
        try:
            handler = _TAGS[tag]
        except KeyError:
            raise RPCProtocolError(f"unknown value tag {tag!r} in an RPC message") from None
        try:
            return handler(self, body, node)
        except (RPCProtocolError, WireFormatError):
            raise
        except (TypeError, ValueError, IndexError, KeyError) as e:
            raise RPCProtocolError(f"malformed {tag} value in an RPC message: {e}") from None

    def _list(self, body) -> list:
        if type(body) is not list:
            raise RPCProtocolError("malformed container in an RPC message")
        return [self.decode(x) for x in body]

    def _pairs(self, body):
        items = self._list(body)
        if len(items) % 2:
            raise RPCProtocolError("malformed dict in an RPC message")
        return zip(items[0::2], items[1::2])

    def _buffer(self, body, kind):
        if type(body) is not int or not 0 <= body < len(self.values):
            raise RPCProtocolError(f"buffer index {body!r} out of range")
        v = self.values[body]
        if not isinstance(v, kind):
            raise RPCProtocolError(f"buffer {body} is not a {kind.__name__}")
        return v

    def _object(self, body, node):
        cls = resolve(body, "class")
        if not isinstance(cls, type) or cls not in _REGISTERED:
            raise RPCProtocolError(
                f"refused object of class {body}: it is not registered on this worker "
                "(decorate it with @shardflow.distributed.rpc.register_class in a module "
                "this worker imports)")
        if "nt" in node:
            return cls(*self._list(node["nt"]))
        state = self.decode(node.get("s"))
        obj = cls.__new__(cls)
        if hasattr(cls, "__setstate__"):
            obj.__setstate__(state)
        elif isinstance(state, dict):
            obj.__dict__.update(state)
        elif isinstance(state, tuple) and len(state) == 2:
            d, slots = state
            if d:
                obj.__dict__.update(d)
            for k, v in (slots or {}).items():
                object.__setattr__(obj, k, v)
        elif state is not None:
            raise RPCProtocolError(f"cannot restore an object of {body} from its state")
        return obj

    def _module(self, body, node):
        cls = resolve(body, "module class")
        if not isinstance(cls, type) or not issubclass(cls, Module):
            raise RPCProtocolError(f"refused module of class {body}: not an nn.Module subclass")
        state = self.decode(node.get("s"))
        if not isinstance(state, dict):
            raise RPCProtocolError(f"malformed state of module {body}")
        obj = cls.__new__(cls)
        obj.__dict__.update(state)
        return obj

    def _rref_value(self, body, node):
        if self._rref is None:
            raise RPCProtocolError("an RRef arrived where none is expected")
        return self._rref(body)


def _short(node) -> str:
    s = repr(node)
    return s if len(s) < 80 else s[:77] + "..."


def _dtype(name):
    from ... import backend

    dt = getattr(backend, name, None) if isinstance(name, str) else None
    if not isinstance(dt, DType):
        raise RPCProtocolError(f"unknown dtype {name!r} in an RPC message")
    return dt


def _numpy_scalar(body):
    name, value = body
    if name not in DTYPES:
        raise RPCProtocolError(f"unknown dtype {name!r} in an RPC message")
    return DTYPES[name].type(value)


_TAGS = {
    "$T": lambda d, b, n: d._buffer(b, Tensor),
    "$A": lambda d, b, n: d._buffer(b, np.ndarray),
    "$B": lambda d, b, n: d._buffer(b, np.ndarray).tobytes(),
    "$t": lambda d, b, n: tuple(d._list(b)),
    "$d": lambda d, b, n: dict(d._pairs(b)),
    "$o": lambda d, b, n: collections.OrderedDict(d._pairs(b)),
    "$s": lambda d, b, n: set(d._list(b)),
    "$f": lambda d, b, n: frozenset(d._list(b)),
    "$c": lambda d, b, n: complex(float(b[0]), float(b[1])),
    "$n": lambda d, b, n: _numpy_scalar(b),
    "$y": lambda d, b, n: _dtype(b),
    "$v": lambda d, b, n: Device(str(b)),
    "$z": lambda d, b, n: Size(int(x) for x in b),
    "$l": lambda d, b, n: slice(*d._list(b)),
    "$e": lambda d, b, n: Ellipsis,
    "$F": lambda d, b, n: resolve(b),
    "$M": Decoder._module,
    "$C": Decoder._object,
    "$R": Decoder._rref_value,
}

