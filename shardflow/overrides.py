"""``torch.overrides``: the ``__torch_function__`` protocol helpers that library code calls.

shardflow's ops do not consult ``__torch_function__`` (its dispatcher, ``autograd/dispatch.py``,
has one hook slot for the profiler, autocast and global tensors instead). What is here is the
protocol as a library function written in PyTorch style runs it itself::

    def my_op(x):
        if has_torch_function_unary(x):
            return handle_torch_function(my_op, (x,), x)
        return x + 0

* ``has_torch_function(args)`` / ``_unary`` / ``_variadic``: whether any argument's type defines
  ``__torch_function__`` (shardflow's ``Tensor`` does not, so plain tensors answer False as
  PyTorch's plain tensors do);
* ``handle_torch_function(public_api, relevant_args, *args, **kwargs)``: PyTorch's algorithm
  (NEP-18): the overloaded arguments, subclasses before their base classes, each asked in turn
  ``type(arg).__torch_function__(public_api, types, args, kwargs)``; the first result that is
  not ``NotImplemented`` is returned, else ``TypeError`` (PyTorch's message);
* ``is_tensor_like``: a ``Tensor`` or an object whose type defines ``__torch_function__``;
* ``get_ignored_functions()`` (the creation functions, which take no tensor),
  ``get_overridable_functions()`` ({namespace: functions} for ``shardflow``, ``Tensor``,
  ``nn.functional``, ``linalg``, ``fft``, ``special``) and ``get_testing_overrides()``
  ({function: a stand-in returning -1}, as PyTorch's test helper) are built from shardflow's
  namespaces at call time;
* ``TorchFunctionMode`` / ``BaseTorchFunctionMode``: subclassing works; entering one raises
  ``NotImplementedError`` (a mode would need every op call routed through it).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types as _types
import warnings

from . import fft as _fft
from . import linalg as _linalg
from . import special as _special
from .autograd.tensor import Tensor
from .nn import functional as _F

__all__ = [
    "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
    "handle_torch_function", "is_tensor_like", "is_tensor_method_or_property",
    "get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
    "get_default_nowrap_functions", "resolve_name", "TorchFunctionMode", "BaseTorchFunctionMode",
    "wrap_torch_function", "enable_reentrant_dispatch",
]

_CREATION = ("tensor", "as_tensor", "asarray", "from_numpy", "frombuffer", "zeros", "ones",
             "empty", "full", "arange", "range", "linspace", "logspace", "eye", "rand", "randn",
             "randint", "randperm", "empty_strided", "tril_indices", "triu_indices", "scalar_tensor",
             "manual_seed", "seed", "initial_seed", "get_default_dtype", "set_default_dtype",
             "is_tensor", "is_storage", "set_printoptions", "get_printoptions", "is_grad_enabled",
             "set_grad_enabled", "no_grad", "enable_grad", "inference_mode", "compile", "load", "save",
             "finfo", "iinfo", "device", "Size", "Generator", "get_rng_state", "set_rng_state",
             "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
             "set_num_threads", "get_num_threads", "promote_types", "result_type", "can_cast")


def _has_override(arg) -> bool:
    return hasattr(type(arg), "__torch_function__")


def has_torch_function(relevant_args) -> bool:
    """Whether any of ``relevant_args`` has a type defining ``__torch_function__``."""
    return any(_has_override(a) for a in relevant_args)


def has_torch_function_unary(arg) -> bool:
    """``has_torch_function((arg,))``."""
    return _has_override(arg)


def has_torch_function_variadic(*args) -> bool:
    """``has_torch_function(args)``."""
    return any(_has_override(a) for a in args)


def _overloaded_args(relevant_args) -> list:
    """The arguments to ask, one per type, a subclass before any of its base classes."""
    seen: set[type] = set()
    out: list = []
    for arg in relevant_args:
        t = type(arg)
        if t in seen or not _has_override(arg):
            continue
        seen.add(t)
        index = next((i for i, old in enumerate(out) if issubclass(t, type(old))), len(out))
        out.insert(index, arg)
    return out


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the ``__torch_function__`` overrides of ``relevant_args`` (see the docstring)."""
    overloaded = _overloaded_args(relevant_args)
    types = tuple(map(type, overloaded))
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and "
                          "will be an error in future, please define it as a classmethod.",
                          DeprecationWarning, stacklevel=2)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    func_name = f"{public_api.__module__}.{public_api.__name__}"
    raise TypeError(f"no implementation found for '{func_name}' on types that implement "
                    f"__torch_function__: {[type(a) for a in overloaded]}")


def wrap_torch_function(dispatcher):
    """Decorator: ``func`` consults the ``__torch_function__`` overrides of the arguments
    ``dispatcher(*args, **kwargs)`` names before running (PyTorch's)."""

    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """PyTorch restores its dispatcher's thread-local state here; shardflow keeps none, so the
    block just runs."""
    yield


def is_tensor_like(inp) -> bool:
    """A ``Tensor`` (or subclass) or an object whose type defines ``__torch_function__``."""
    return isinstance(inp, Tensor) or _has_override(inp)


def is_tensor_method_or_property(func) -> bool:
    """Whether ``func`` is one of ``Tensor``'s methods or properties."""
    if isinstance(func, property):
        return func in vars(Tensor).values()
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func


def _root():
    """The ``shardflow`` package (always imported before any of its submodules)."""
    return sys.modules[__name__.rpartition(".")[0]]


def get_ignored_functions() -> set:
    """The public functions that take no tensor, so no ``__torch_function__`` can apply."""
    root = _root()
    return {getattr(root, n) for n in _CREATION if hasattr(root, n)}


def _public_functions(namespace) -> list:
    out = []
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        obj = getattr(namespace, name)
        if isinstance(obj, (_types.FunctionType, _types.BuiltinFunctionType)) or (
                callable(obj) and not isinstance(obj, (type, _types.ModuleType))):
            out.append(obj)
    return out


def get_overridable_functions() -> dict:
    """{namespace: [functions]}: the public functions of ``shardflow`` (less the ignored ones),
    ``Tensor``'s methods, ``nn.functional``, ``linalg``, ``fft`` and ``special``."""
    root = _root()
    ignored = {id(f) for f in get_ignored_functions()}
    out = {root: [f for f in _public_functions(root) if id(f) not in ignored]}
    out[Tensor] = [getattr(Tensor, n) for n in dir(Tensor)
                   if not n.startswith("_") and callable(getattr(Tensor, n, None))]
    for ns in (_F, _linalg, _fft, _special):
        out[ns] = _public_functions(ns)
    return out


def get_testing_overrides() -> dict:
    """{function: a stand-in taking any arguments and returning -1}, for every overridable
    function (PyTorch's helper for testing ``__torch_function__`` coverage)."""
    def dummy(*args, **kwargs):
        return -1

    return {f: dummy for fs in get_overridable_functions().values() for f in fs}


def get_default_nowrap_functions() -> set:
    """Tensor accessors whose results ``Tensor.__torch_function__`` would not wrap."""
    return {Tensor.grad.__get__} if isinstance(vars(Tensor).get("grad"), property) else set()


def resolve_name(f):
    """``"shardflow.<name>"`` / ``"shardflow.Tensor.<name>"`` for a function of those namespaces,
    else None."""
    name = getattr(f, "__name__", None)
    if name is None:
        return None
    if getattr(Tensor, name, None) is f:
        return f"{_root().__name__}.Tensor.{name}"
    if getattr(_root(), name, None) is f:
        return f"{_root().__name__}.{name}"
    return None


class TorchFunctionMode:
    """PyTorch's base class for ``__torch_function__`` modes. Subclassing works; entering raises
    ``NotImplementedError``: shardflow's ops do not consult ``__torch_function__`` (modes would
    need every op call routed through the active mode)."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        raise NotImplementedError(
            f"{type(self).__name__}: shardflow does not run __torch_function__ modes (its ops do "
            "not consult __torch_function__; docs/COMPAT.md, torch.overrides). Wrap the functions "
            "you want to intercept instead, or use shardflow.profiler to observe op calls.")

    def __exit__(self, *exc):
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs).__enter__()


class BaseTorchFunctionMode(TorchFunctionMode):
    """PyTorch's mode whose ``__torch_function__`` calls the function (entering raises, as
    ``TorchFunctionMode``'s)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))
