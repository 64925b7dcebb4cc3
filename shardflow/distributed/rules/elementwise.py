"""Elementwise ops: one rule for every op in the name lists below (and their in-place forms).

The lists are the elementwise ops of ``ops/arithmetic.py``, ``ops/elementwise.py``,
``ops/rounding.py`` and ``ops/comparison.py`` (``tests/distributed/test_global_tensor_route.py`` checks that
every op those files register has a rule here, or is on its list of ops that are not
elementwise). Rule, per mesh dimension, with broadcasting:

* a split operand whose dim survives broadcasting keeps the output split on that dim; the
  other operands are sliced alike (B -> S locally) or stay B where they broadcast;
* Partial operands: ``add``/``sub`` of Partials stay Partial (a B operand becomes P by
  zero-filling, no communication; not with a Python scalar, which would be added on every
  rank), ``mul``/``div`` of one Partial by B keep P, ``neg``/``negative`` keep it;
  anything else boxes the Partial to B (non-linear ops need the whole value);
* otherwise B.

In-place forms (``x.add_(y)``) run the out-of-place rule and write the result, re-laid to
``x``'s sbp, into ``x``. ``where(cond, x, y)`` uses the same rule.
"""

from __future__ import annotations

from ...autograd import Tensor
from ...autograd import dispatch as _dispatch
from ..global_tensor import to_global
from ..sbp import Split, broadcast, partial_sum
from .propagate import broadcast_shape, global_tensors_in, run_on_shards
from .registry import RuleSet

__all__ = ["ELEMENTWISE_OPS", "INPLACE_OPS", "family"]

ARITHMETIC = (
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg",
    "negative", "reciprocal", "floor_divide", "fmod", "remainder", "pow", "square", "lerp",
    "addcdiv", "addcmul",
)
MATH = (
    "abs", "absolute", "sgn", "sign", "exp", "exp2", "expm1", "log", "log10", "log1p", "log2",
    "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "erf", "erfc", "ceil", "floor", "fix", "frac", "round", "trunc",
    "clamp", "clamp_max", "clamp_min", "clip", "maximum", "minimum", "fmax", "fmin",
    "nan_to_num", "acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh", "deg2rad",
    "rad2deg", "sinc", "logit", "lgamma", "digamma", "erfinv", "atan2", "arctan2", "hypot",
    "copysign", "xlogy",
)
ACTIVATIONS = (
    "relu", "relu6", "gelu", "silu", "mish", "sigmoid", "expit", "special_expit", "logsigmoid",
    "softplus", "elu", "celu", "selu", "leaky_relu", "hardtanh", "hardsigmoid", "hardswish",
)
PREDICATES = (
    "eq", "ne", "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge",
    "greater_equal", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "logical_and",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not",
)
ELEMENTWISE_OPS = ARITHMETIC + MATH + ACTIVATIONS + PREDICATES
INPLACE_OPS = tuple(n + "_" for n in ELEMENTWISE_OPS)

_ADD_LIKE = {"add", "sub", "subtract"}
_MUL_LIKE = {"mul", "multiply"}
_DIV_LIKE = {"div", "divide", "true_divide"}
_LINEAR_UNARY = {"neg", "negative", "clone", "contiguous", "_to_dtype", "detach"}


def _ew_plan(name, tensors, out_shape, n_scalars, mesh_nd):
    """Targets (per tensor) and the output sbp of an elementwise op."""
    out_nd = len(out_shape)
    targets = [list(t._spec.sbp) for t in tensors]
    out = []
    for k in range(mesh_nd):
        sbps = [t._spec.sbp[k] for t in tensors]
        splits = [(i, s) for i, s in enumerate(sbps) if s.is_split()]
        chosen = None
        for i, s in splits:
            od = s.dim + out_nd - len(tensors[i]._spec.shape)
            if out_shape[od] > 1 or tensors[i]._spec.shape[s.dim] == out_shape[od]:
                chosen = Split(od, s.blocks)
                break
        if chosen is not None:
            for i, t in enumerate(tensors):
                shp = t._spec.shape
                d = chosen.dim - (out_nd - len(shp))
                if d >= 0 and shp[d] == out_shape[chosen.dim] and shp[d] != 1:
                    targets[i][k] = Split(d, chosen.blocks)
                else:
                    targets[i][k] = broadcast
            out.append(chosen)
            continue
        partial = [i for i, s in enumerate(sbps) if s.is_partial()]
        if partial:
            ops = {sbps[i].op for i in partial}
            ok_sum = ops == {"sum"}
            if ok_sum and name in _ADD_LIKE and n_scalars == 0:
                for i in range(len(tensors)):
                    targets[i][k] = partial_sum
                out.append(partial_sum)
                continue
            if ok_sum and (name in _MUL_LIKE and len(partial) == 1) or (
                ok_sum and name in _DIV_LIKE and partial == [0]
            ) or (name in _LINEAR_UNARY and len(tensors) == 1):
                out.append(sbps[partial[0]] if name in _LINEAR_UNARY else partial_sum)
                continue
            for i in partial:
                targets[i][k] = broadcast
        out.append(broadcast)
    return [tuple(t) for t in targets], tuple(out)


def _elementwise_rule(name, func, args, kwargs):
    """Any op of ``ELEMENTWISE_OPS`` (see the module docstring)."""
    tensors = global_tensors_in(args, kwargs)
    uniq = list({id(t): t for t in tensors}.values())
    out_shape = broadcast_shape([t._spec.shape for t in uniq])
    n_scalars = sum(1 for a in list(args) + list(kwargs.values())
                    if isinstance(a, int | float) and not isinstance(a, bool)) if name in _ADD_LIKE else 0
    if name in _ADD_LIKE and "alpha" in kwargs:
        n_scalars -= 1  # alpha scales, it is not an operand
    mesh_nd = uniq[0]._spec.placement.ndim
    tg, out_sbp = _ew_plan(name, uniq, out_shape, n_scalars, mesh_nd)
    targets = {id(t): s for t, s in zip(uniq, tg)}
    return run_on_shards(name, func, args, kwargs, targets, [out_sbp], [out_shape])


def _inplace_rule(name, func, args, kwargs):
    """``x.add_(y)`` on a global x: the out-of-place rule, then x takes the result."""
    base = name[:-1]
    self = args[0]
    if not isinstance(self, Tensor) or self._spec is None:
        return NotImplemented
    out = _dispatch.OPS[base](*args, **kwargs)
    if out._spec.sbp != self._spec.sbp:
        out = to_global(out, sbp=self._spec.sbp)
    if tuple(out._spec.shape) != tuple(self._spec.shape):
        raise RuntimeError(
            f"{name}: the result's shape {out._spec.shape} differs from the tensor's "
            f"{self._spec.shape}"
        )
    spec = self._spec
    self._spec = None
    res_spec = out._spec
    out._spec = None
    try:
        self._inplace(out)
    finally:
        self._spec = spec
        out._spec = res_spec
    return self


def _where_rule(name, func, args, kwargs):
    if len(args) != 3 or kwargs:
        return NotImplemented
    return _elementwise_rule(name, func, args, kwargs)


family = RuleSet("elementwise")
family.add(ELEMENTWISE_OPS, _elementwise_rule)
family.add(INPLACE_OPS, _inplace_rule)
family.add(("where",), _where_rule)
