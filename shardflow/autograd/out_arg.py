"""PyTorch's ``out=`` argument, for every registered op (``torch.add(a, b, out=c)``).

Who handles it. An op whose function declares an ``out`` parameter handles it itself (``cat``,
``stack``, the ``*_copy`` ops, ...). For every other op the routed form (``dispatch.register``)
takes ``out`` off the call, runs the op as usual (hooks included) and hands the result to
:func:`write_out`. Before this, ops either refused ``out=`` (a TypeError) or, worse, declared
it and ignored it, so ``torch.add(a, b, out=c)`` left ``c`` unchanged.

What ``write_out`` does, as PyTorch's out= kernels:

* refuses, under grad mode, a result that requires grad (an input required grad) or an
  ``out`` that requires grad: "functions with out=... arguments don't support automatic
  differentiation";
* casts the result to ``out``'s dtype where PyTorch's ``can_cast`` allows it (the dtype kind
  may only go up: bool < integer < floating < complex), else "result type Float can't be
  cast to the desired output type Long";
* resizes ``out`` to the result's shape (with PyTorch's deprecation warning when ``out`` had
  elements and another shape), then copies into it, so ``out`` keeps its identity (views
  of it see the values) and its version counter moves;
* several results (``max(x, 1)``, ``sort``, ``linalg.svd`` ...) take a tuple of ``out``
  tensors, one per result, and the call returns them in the result's type (its named
  tuple); one result returns ``out`` itself.

A torch-namespace function that is not a registered op gets the same with the
:func:`writes_out` decorator.

Factory functions (``zeros``, ``arange``, ``randn`` ...) given ``out`` and no ``dtype`` make
``out``'s dtype, as PyTorch's do (``torch.zeros(3, out=long_tensor)`` is int64, not a
refused float32 result): :data:`FACTORIES` names them.
"""

from __future__ import annotations

import functools

from ..backend.dtypes import _SCALAR_TYPE_NAMES
from ..backend.user_warning import warn_at_caller
from . import grad_mode as _gm

# Tensor is imported where used: tensor.py imports dispatch.py, which imports this module

# dtype kinds (backend dtype._category): 0 bool, 1 integer, 2 floating, 3 complex; torch names them
# as its ScalarType (_SCALAR_TYPE_NAMES) in its messages

# ops that make a tensor from sizes or ranges: with out= and no dtype, out's dtype is theirs
FACTORIES = frozenset({
    "zeros", "ones", "full", "empty", "arange", "range", "linspace", "logspace", "eye", "rand",
    "randn", "randint", "randperm", "empty_strided", "tril_indices", "triu_indices", "fft_fftfreq",
    "fft_rfftfreq"})


def writes_out(name: str):
    """Decorator: ``out=`` for a torch-namespace function that is not a registered op
    (``torch.linalg.inv`` over a helper, ``torch.range``); ``name`` is the op name errors use."""

    def deco(func):
        @functools.wraps(func)
        def with_out(*args, out=None, **kwargs):
            if out is None:
                return func(*args, **kwargs)
            return call_with_out(name, func, args, {**kwargs, "out": out})

        return with_out

    return deco


def declares_out(func) -> bool:
    """Whether ``func`` takes ``out`` itself (then it handles it; see the module docstring)."""
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    return "out" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def call_with_out(name: str, call, args: tuple, kwargs: dict):
    """``call(*args, **kwargs)`` with ``kwargs['out']`` taken off and the result written into it."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    if out is None:
        return call(*args, **kwargs)
    from .tensor import Tensor
    if name in FACTORIES and kwargs.get("dtype") is None and isinstance(out, Tensor):
        kwargs["dtype"] = out.dtype
    return write_out(call(*args, **kwargs), out, name)


def write_out(result, out, name: str):
    """Write ``result`` (a Tensor or a tuple of them) into ``out`` (see the module docstring);
    return ``out`` (several: in the result's tuple type)."""
    from .tensor import Tensor
    if isinstance(result, Tensor):
        if isinstance(out, (tuple, list)):
            if len(out) != 1:
                raise RuntimeError(f"{name}(): expected out to be a Tensor or a sequence of 1 Tensor, "
                                   f"got {len(out)} tensors")
            out = out[0]
        _check(result, out, name)
        copy_into(result, out)
        return out
    if isinstance(result, tuple) and result and all(isinstance(r, Tensor) for r in result):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            got = f"{len(out)} tensors" if isinstance(out, (tuple, list)) else type(out).__name__
            raise TypeError(f"{name}(): out must be a tuple of {len(result)} tensors (one per result), got {got}")
        for r, o in zip(result, out, strict=True):  # all checked before any is written
            _check(r, o, name)
        for r, o in zip(result, out, strict=True):
            copy_into(r, o)
        outs = tuple(out)
        return type(result)(*outs) if hasattr(type(result), "_fields") else outs
    raise TypeError(f"{name}() got an unexpected keyword argument 'out' (it returns "
                    f"{type(result).__name__}, not a tensor)")


def _check(result, out, name: str) -> None:
    from .tensor import Tensor

    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _gm.is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic differentiation, but one "
            "of the arguments requires grad. Call it without out= (y = f(x)) or under torch.no_grad()")
    r, o = result.dtype, out.dtype
    if r._category > o._category:
        raise RuntimeError(f"result type {_SCALAR_TYPE_NAMES.get(r.name, r.name)} can't be cast to the desired "
                           f"output type {_SCALAR_TYPE_NAMES.get(o.name, o.name)}")
    if result.device != out.device:
        raise RuntimeError(f"{name}(): expected out on {result.device} (where the result is), got out "
                           f"on {out.device}; move it with out.to({str(result.device)!r})")


def copy_into(result, out) -> None:
    """Resize ``out`` to ``result``'s shape (PyTorch's deprecation warning, at the user's line,
    when it had elements) and copy ``result`` into it, untracked.
    Also the last step of the ops that take ``out`` themselves (cat, stack, special functions)."""
    shape = tuple(result.shape)
    if tuple(out.shape) != shape:
        if out.numel():
            warn_at_caller(
                f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                f"which does not match the required output shape {list(shape)}. This behavior is "
                "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                "elements with t.resize_(0).")
        out.resize_(shape)
    with _gm.no_grad():
        out.copy_(result)
