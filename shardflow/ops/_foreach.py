"""``torch._foreach_*``: an op applied to every tensor of a list (PyTorch's multi-tensor ops).

PyTorch fuses these into few kernel launches for its optimizers; programs call them directly
for exponential moving averages of weights (``torch._foreach_lerp_(ema, params, 1 - decay)``,
``torch._foreach_mul_`` + ``_foreach_add_``), gradient clipping and hand-written optimizers.
Here each is the per-tensor op in a loop (on NumPy there is no launch cost to save), so values,
dtype promotion, broadcasting of a scalar tensor, autograd and the in-place rules are exactly
those ops'. What PyTorch's forms add is kept: the argument forms (a number, a list of numbers,
a list of tensors, one tensor), its length checks and messages, out-of-place results as a
tuple, and in-place forms returning the list they were given.
"""

from __future__ import annotations

from numbers import Number

import numpy as np

from ..autograd import Tensor
from ._linalg_names import vector_norm

__all__: list[str] = []

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round",
          "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")


def _check_list(tensors, what="Tensor list") -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, list | tuple):
        raise TypeError(f"_foreach ops take a list or tuple of tensors, got {type(tensors).__name__}; "
                        "wrap a single tensor as [t]")
    if not tensors:
        raise RuntimeError(f"{what} must have at least one tensor.")
    return list(tensors)


def _pairs(name, tensors, other):
    """``other`` matched to each tensor: a number, a Tensor (the same for all), or a list of
    numbers or tensors of the same length."""
    tensors = _check_list(tensors)
    if isinstance(other, list | tuple):
        if len(other) != len(tensors):
            if other and isinstance(other[0], Tensor):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} "
                                   f"and {len(other)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(zip(tensors, other))
    if isinstance(other, Number | Tensor | np.generic):
        return [(t, other) for t in tensors]
    raise TypeError(f"torch.{name}: expected a number, a tensor, or a list of them as the second "
                    f"argument, got {type(other).__name__}")


def _export(fn, name):
    fn.__name__ = fn.__qualname__ = name
    globals()[name] = fn
    __all__.append(name)


def _unary(op):
    def out_of_place(self):
        return tuple(getattr(t, op)() for t in _check_list(self))

    def in_place(self):
        for t in _check_list(self):
            getattr(t, op + "_")()
        return self

    out_of_place.__doc__ = f"``[t.{op}() for t in self]`` as a tuple."
    in_place.__doc__ = f"``t.{op}_()`` for each tensor; returns ``self``."
    _export(out_of_place, f"_foreach_{op}")
    _export(in_place, f"_foreach_{op}_")


for _op in _UNARY:
    _unary(_op)


def _scalar_or_tensor_op(op, t, o):
    """``maximum``/``minimum`` with a number are ``clamp_min``/``clamp_max`` (PyTorch's
    foreach forms accept numbers; the tensor ops do not)."""
    if op in ("maximum", "minimum") and not isinstance(o, Tensor):
        return "clamp_min" if op == "maximum" else "clamp_max"
    return op


def _binary(op, with_alpha=False):
    def out_of_place(self, other, **kw):
        if kw and not with_alpha:
            raise TypeError(f"_foreach_{op}() got unexpected keyword arguments {sorted(kw)}")
        return tuple(getattr(t, _scalar_or_tensor_op(op, t, o))(o, **kw)
                     for t, o in _pairs(f"_foreach_{op}", self, other))

    def in_place(self, other, **kw):
        if kw and not with_alpha:
            raise TypeError(f"_foreach_{op}_() got unexpected keyword arguments {sorted(kw)}")
        for t, o in _pairs(f"_foreach_{op}_", self, other):
            getattr(t, _scalar_or_tensor_op(op, t, o) + "_")(o, **kw)
        return self

    out_of_place.__doc__ = f"``t.{op}(o)`` for each pair (``other``: a number, a tensor, or a list)."
    in_place.__doc__ = f"``t.{op}_(o)`` for each pair; returns ``self``."
    _export(out_of_place, f"_foreach_{op}")
    _export(in_place, f"_foreach_{op}_")


for _op in ("mul", "div", "maximum", "minimum", "clamp_max", "clamp_min"):
    _binary(_op)
for _op in ("add", "sub"):
    _binary(_op, with_alpha=True)


def _foreach_pow(self, exponent):
    """``t ** e`` for each tensor, or ``self ** t`` when ``self`` is a number."""
    if isinstance(self, Number):
        from .elementwise import pow as _pow

        return tuple(_pow(self, t) for t in _check_list(exponent))
    return tuple(t.pow(e) for t, e in _pairs("_foreach_pow", self, exponent))


def _foreach_pow_(self, exponent):
    for t, e in _pairs("_foreach_pow_", self, exponent):
        t.pow_(e)
    return self


def _pointwise3(op):
    def out_of_place(self, tensor1, tensor2, value=1):
        rows = _triples(f"_foreach_{op}", self, tensor1, tensor2, value)
        return tuple(getattr(t, op)(a, b, value=v) for t, a, b, v in rows)

    def in_place(self, tensor1, tensor2, value=1):
        for t, a, b, v in _triples(f"_foreach_{op}_", self, tensor1, tensor2, value):
            getattr(t, op + "_")(a, b, value=v)
        return self

    out_of_place.__doc__ = f"``t.{op}(a, b, value=v)`` for each tensor (``value``: a number or a list)."
    in_place.__doc__ = f"``t.{op}_(a, b, value=v)`` for each tensor; returns ``self``."
    _export(out_of_place, f"_foreach_{op}")
    _export(in_place, f"_foreach_{op}_")


def _triples(name, self, tensor1, tensor2, value):
    a = _pairs(name, self, _check_list(tensor1))
    b = _pairs(name, self, _check_list(tensor2))
    if isinstance(value, Tensor):  # one value per tensor, as a 1-D tensor
        value = value.tolist()
    values = [v for _, v in _pairs(name, self, value)]
    return [(t, x, y, float(v) if isinstance(v, Tensor) else v) for (t, x), (_, y), v in zip(a, b, values)]


_pointwise3("addcmul")
_pointwise3("addcdiv")


def _foreach_lerp(self, tensors1, weight):
    """``t.lerp(end, w)`` for each tensor (``weight``: a number, a list of numbers or tensors)."""
    ends = _pairs("_foreach_lerp", self, _check_list(tensors1))
    ws = _pairs("_foreach_lerp", self, weight)
    return tuple(t.lerp(e, w) for (t, e), (_, w) in zip(ends, ws))


def _foreach_lerp_(self, tensors1, weight):
    """``t.lerp_(end, w)`` for each tensor; returns ``self`` (the EMA update
    ``_foreach_lerp_(ema, params, 1 - decay)``)."""
    ends = _pairs("_foreach_lerp_", self, _check_list(tensors1))
    ws = _pairs("_foreach_lerp_", self, weight)
    for (t, e), (_, w) in zip(ends, ws):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    """The vector norm of each tensor (0-d tensors, as a tuple)."""
    return tuple(vector_norm(t, ord, dtype=dtype) for t in _check_list(self))


def _foreach_max(self):
    """The largest element of each tensor (0-d tensors, as a tuple)."""
    return tuple(t.max() for t in _check_list(self))


def _foreach_powsum(self, ord=2, dtype=None):
    """``sum(|t| ** ord)`` of each tensor (``_foreach_norm`` before its root)."""
    out = []
    for t in _check_list(self):
        a = t.abs() if dtype is None else t.abs().to(dtype)
        out.append(a.pow(ord).sum())
    return tuple(out)


def _foreach_mm(self, mat2):
    """``a @ b`` for each pair of matrices."""
    return tuple(a.mm(b) for a, b in _pairs("_foreach_mm", self, _check_list(mat2)))


def _foreach_copy_(self, src, non_blocking=False):
    """``t.copy_(s)`` for each pair; returns ``self``."""
    for t, s in _pairs("_foreach_copy_", self, _check_list(src)):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_zero_(self):
    """``t.zero_()`` for each tensor; returns ``self``."""
    for t in _check_list(self):
        t.zero_()
    return self


def _foreach_clone(self, *, memory_format=None):
    """``t.clone()`` for each tensor, as a tuple."""
    kw = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**kw) for t in _check_list(self))


__all__ += ["_foreach_pow", "_foreach_pow_", "_foreach_lerp", "_foreach_lerp_", "_foreach_norm",
            "_foreach_max", "_foreach_powsum", "_foreach_mm", "_foreach_copy_", "_foreach_zero_",
            "_foreach_clone"]
