"""Differential fuzzing of elementwise ops against PyTorch (see ``_diff.py``): unary math,
binary arithmetic and comparisons with broadcasting and Python scalars (type promotion),
ternary ops (where, clamp, lerp, addcmul, addcdiv), over every dtype family, 0-d and empty
tensors, non-contiguous layouts, NaN / inf / -0.0; backward for the float ops."""

from hypothesis import given
from hypothesis import strategies as st

from ._diff import FLOATS, FUZZ, INTS, broadcast_shape, check, inp, sizes

UNARY_FLOAT = {
    "exp": lambda L, x: L.exp(x), "log": lambda L, x: L.log(x), "sqrt": lambda L, x: L.sqrt(x),
    "rsqrt": lambda L, x: L.rsqrt(x), "sin": lambda L, x: L.sin(x), "cos": lambda L, x: L.cos(x),
    "tanh": lambda L, x: L.tanh(x), "sigmoid": lambda L, x: L.sigmoid(x),
    "relu": lambda L, x: L.relu(x), "gelu": lambda L, x: L.nn.functional.gelu(x),
    "silu": lambda L, x: L.nn.functional.silu(x), "softplus": lambda L, x: L.nn.functional.softplus(x),
    "log1p": lambda L, x: L.log1p(x), "expm1": lambda L, x: L.expm1(x),
    "reciprocal": lambda L, x: L.reciprocal(x), "erf": lambda L, x: L.erf(x),
    "atan": lambda L, x: L.atan(x), "log2": lambda L, x: L.log2(x),
    "leaky_relu": lambda L, x: L.nn.functional.leaky_relu(x, 0.1),
    "elu": lambda L, x: L.nn.functional.elu(x),
}
UNARY_ANY = {
    "neg": lambda L, x: L.neg(x), "abs": lambda L, x: L.abs(x), "sign": lambda L, x: L.sign(x),
    "square": lambda L, x: L.square(x), "floor": lambda L, x: L.floor(x), "ceil": lambda L, x: L.ceil(x),
    "round": lambda L, x: L.round(x), "trunc": lambda L, x: L.trunc(x), "frac": lambda L, x: L.frac(x),
    "isnan": lambda L, x: L.isnan(x), "isinf": lambda L, x: L.isinf(x), "isfinite": lambda L, x: L.isfinite(x),
    "signbit": lambda L, x: L.signbit(x), "logical_not": lambda L, x: L.logical_not(x),
    "bitwise_not": lambda L, x: L.bitwise_not(x), "nan_to_num": lambda L, x: L.nan_to_num(x),
    "exp_int": lambda L, x: L.exp(x), "sqrt_int": lambda L, x: L.sqrt(x), "sigmoid_int": lambda L, x: L.sigmoid(x),
    "round_dec": lambda L, x: L.round(x, decimals=1), "clone": lambda L, x: x.clone(),
    "neg_": lambda L, x: x.neg_(), "abs_": lambda L, x: x.abs_(), "relu_": lambda L, x: x.relu_(),
    "positive": lambda L, x: L.positive(x), "sgn": lambda L, x: L.sgn(x),
}

BINARY = {
    "add": lambda L, a, b: L.add(a, b), "sub": lambda L, a, b: L.sub(a, b), "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b, "floor_div": lambda L, a, b: L.div(a, b, rounding_mode="floor"),
    "trunc_div": lambda L, a, b: L.div(a, b, rounding_mode="trunc"), "floordiv_op": lambda L, a, b: a // b,
    "remainder": lambda L, a, b: L.remainder(a, b), "fmod": lambda L, a, b: L.fmod(a, b),
    "pow": lambda L, a, b: L.pow(a, b), "maximum": lambda L, a, b: L.maximum(a, b),
    "minimum": lambda L, a, b: L.minimum(a, b), "fmax": lambda L, a, b: L.fmax(a, b),
    "fmin": lambda L, a, b: L.fmin(a, b), "atan2": lambda L, a, b: L.atan2(a, b),
    "eq": lambda L, a, b: a == b, "ne": lambda L, a, b: a != b, "lt": lambda L, a, b: a < b,
    "le": lambda L, a, b: a <= b, "gt": lambda L, a, b: a > b, "ge": lambda L, a, b: a >= b,
    "logical_and": lambda L, a, b: L.logical_and(a, b), "logical_xor": lambda L, a, b: L.logical_xor(a, b),
    "bitwise_and": lambda L, a, b: a & b, "bitwise_or": lambda L, a, b: a | b, "bitwise_xor": lambda L, a, b: a ^ b,
    "hypot": lambda L, a, b: L.hypot(a, b), "copysign": lambda L, a, b: L.copysign(a, b),
    "xlogy": lambda L, a, b: L.xlogy(a, b), "add_alpha": lambda L, a, b: L.add(a, b, alpha=2),
    "isclose": lambda L, a, b: L.isclose(a, b), "add_": lambda L, a, b: a.add_(b), "mul_": lambda L, a, b: a.mul_(b),
    "sub_": lambda L, a, b: a.sub_(b), "div_": lambda L, a, b: a.div_(b), "lshift": lambda L, a, b: a << b,
    "rshift": lambda L, a, b: a >> b, "rsub": lambda L, a, b: L.rsub(a, b),
}
SCALARS = [0, 1, -2, 3, 0.5, -1.5, 2.0, True, False, float("nan"), float("inf"), 1e10, 300, -129]
DIFF_BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "hypot", "xlogy", "fmax",
               "fmin", "add_alpha", "copysign", "remainder", "fmod"}
ALL = FLOATS + INTS + ("bool", "complex64")


@FUZZ
@given(name=st.sampled_from(sorted(UNARY_FLOAT)), x=inp(), grad=st.booleans())
def test_unary_float(name, x, grad):
    check(UNARY_FLOAT[name], [x], grad=grad)


@FUZZ
@given(name=st.sampled_from(sorted(UNARY_ANY)), x=inp(dtypes=ALL))
def test_unary_any_dtype(name, x):
    check(UNARY_ANY[name], [x])


@st.composite
def binary_case(draw):
    name = draw(st.sampled_from(sorted(BINARY)))
    shape = draw(sizes())
    a = draw(inp(shape=shape, dtypes=ALL))
    kind = draw(st.sampled_from(["tensor", "tensor", "scalar", "rscalar"]))
    if kind == "tensor":
        b = draw(inp(shape=draw(broadcast_shape(shape)), dtypes=ALL))
        return name, [a, b], None, kind
    return name, [a], draw(st.sampled_from(SCALARS)), kind


@FUZZ
@given(case=binary_case(), grad=st.booleans())
def test_binary(case, grad):
    name, inputs, scalar, kind = case
    f = BINARY[name]
    if kind == "scalar":
        check(lambda L, a: f(L, a, scalar), inputs, grad=grad and name in DIFF_BINARY)
    elif kind == "rscalar":
        if name.endswith("_") or name in ("isclose",):
            return
        check(lambda L, a: f(L, scalar, a) if name not in ("add", "sub", "pow", "maximum") else
              {"add": scalar + a, "sub": scalar - a, "pow": scalar ** a, "maximum": a}[name] if False else f(L, scalar, a),
              inputs, grad=grad and name in DIFF_BINARY)
    else:
        check(f, inputs, grad=grad and name in DIFF_BINARY)


TERNARY = {
    "where": lambda L, c, a, b: L.where(c > 0, a, b),
    "clamp": lambda L, x, lo, hi: L.clamp(x, lo, hi),
    "lerp": lambda L, a, b, w: L.lerp(a, b, w),
    "addcmul": lambda L, x, a, b: L.addcmul(x, a, b, value=0.5),
    "addcdiv": lambda L, x, a, b: L.addcdiv(x, a, b, value=2),
}


@st.composite
def ternary_case(draw):
    name = draw(st.sampled_from(sorted(TERNARY)))
    shape = draw(sizes())
    dts = ALL if name in ("where", "clamp") else FLOATS
    dt = st.sampled_from(dts)
    ins = [draw(inp(shape=shape, dtypes=(draw(dt),)))]
    for _ in range(2):
        ins.append(draw(inp(shape=draw(broadcast_shape(shape)), dtypes=(draw(dt),))))
    return name, ins


@FUZZ
@given(case=ternary_case(), grad=st.booleans())
def test_ternary(case, grad):
    name, ins = case
    check(TERNARY[name], ins, grad=grad)


SCALAR_TERNARY = {
    "where_scalar": lambda L, c, a: L.where(c > 0, a, 0.5),
    "where_scalar2": lambda L, c, a: L.where(c > 0, 2, a),
    "clamp_min": lambda L, x, _: L.clamp(x, min=-1),
    "clamp_max": lambda L, x, _: L.clamp(x, max=0.5),
    "clamp_both": lambda L, x, _: L.clamp(x, 1, -1),
    "clamp_": lambda L, x, _: x.clamp_(-1.5, 2),
    "lerp_scalar": lambda L, a, b: L.lerp(a, b, 0.3),
    "masked_fill": lambda L, a, b: a.masked_fill(b > 0, 7),
    "masked_fill_nan": lambda L, a, b: a.masked_fill(b > 0, float("nan")),
}


@FUZZ
@given(name=st.sampled_from(sorted(SCALAR_TERNARY)), shape=sizes(), data=st.data(), grad=st.booleans())
def test_scalar_ternary(name, shape, data, grad):
    a = data.draw(inp(shape=shape, dtypes=ALL))
    b = data.draw(inp(shape=data.draw(broadcast_shape(shape)), dtypes=ALL))
    check(SCALAR_TERNARY[name], [a, b], grad=grad)
