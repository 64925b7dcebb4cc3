"""Specs for the elementwise family (shardflow/ops/arithmetic.py, elementwise.py,
rounding.py, comparison.py).

Inputs avoid non-differentiable points: 'positive' for log/sqrt/pow bases, 'nonzero' for
abs/relu/divisors, uniform ranges away from clamp/hardtanh kinks only by chance (random
float32 values never sit within the finite-difference step of a kink in practice).
Activations are reached through ``F(m)``: ``torch.nn.functional`` for torch, the top-level
``shardflow`` functions for shardflow (nn.functional re-exports them).
"""

import torch

from shardflow.testing.opspec import Arg, OpSpec


def F(m):
    return torch.nn.functional if m is torch else m


N = Arg((3, 4))
P = Arg((3, 4), kind="positive")
NZ = Arg((3, 4), kind="nonzero")


def U(lo, hi, shape=(3, 4)):
    return Arg(shape, kind="uniform", low=lo, high=hi)


def Int(lo, hi, shape=(3, 4)):
    return Arg(shape, kind="int", low=lo, high=hi)


B = Arg((3, 4), kind="bool")

_unary = [
    ("exp", N), ("exp2", N), ("expm1", N), ("log", P), ("log2", P), ("log10", P),
    ("log1p", P), ("sqrt", P), ("rsqrt", P), ("abs", NZ), ("sin", N), ("cos", N),
    ("tan", U(-1, 1)), ("tanh", N), ("sinh", N), ("cosh", N), ("asin", U(-0.9, 0.9)),
    ("acos", U(-0.9, 0.9)), ("atan", N), ("sigmoid", N), ("erf", N), ("erfc", N),
    ("square", N), ("floor", U(-3, 3)), ("ceil", U(-3, 3)), ("round", U(-3, 3)),
    ("trunc", U(-3, 3)), ("frac", U(-3, 3)), ("sign", NZ),
]

SPECS = [OpSpec(f"ew_{name}", (lambda n: lambda m, a: getattr(m, n)(a))(name), [arg])
         for name, arg in _unary]

SPECS += [
    # unary: wide ranges, method forms, in-place forms, integer inputs
    OpSpec("ew_sigmoid_wide", lambda m, a: m.sigmoid(a), [U(-30, 30)]),
    OpSpec("ew_erf_wide", lambda m, a: m.erf(a), [U(-6, 6, (40,))]),
    OpSpec("ew_erfc_wide", lambda m, a: m.erfc(a), [U(-6, 6, (40,))], atol=1e-6, rtol=1e-4),
    OpSpec("ew_exp_method", lambda m, a: a.exp().log1p().sqrt(), [N]),
    OpSpec("ew_round_decimals", lambda m, a: m.round(a, decimals=2), [U(-3, 3)]),
    OpSpec("ew_exp_inplace_graph", lambda m, a: (a * 1).exp_(), [N]),
    OpSpec("ew_sigmoid_inplace_graph", lambda m, a: (a * 1).sigmoid_(), [N]),
    OpSpec("ew_tanh_inplace_graph", lambda m, a: (a * 1).tanh_(), [N]),
    OpSpec("ew_sqrt_inplace_graph", lambda m, a: (a * 1).sqrt_() * 2, [P]),
    OpSpec("ew_abs_inplace_graph", lambda m, a: (a * 1).abs_(), [NZ]),
    OpSpec("ew_floor_inplace_graph", lambda m, a: (a * 1).floor_() + a, [U(-3, 3)]),
    OpSpec("ew_exp_int", lambda m, a: m.exp(a), [Int(-3, 3)], grad=False, fd=False),
    OpSpec("ew_sqrt_int", lambda m, a: m.sqrt(a), [Int(0, 9)], grad=False, fd=False),
    OpSpec("ew_abs_int", lambda m, a: m.abs(a), [Int(-5, 5)], grad=False, fd=False),
    OpSpec("ew_square_int", lambda m, a: m.square(a), [Int(-5, 5)], grad=False, fd=False),
    OpSpec("ew_floor_int", lambda m, a: m.floor(a), [Int(-5, 5)], grad=False, fd=False),
    OpSpec("ew_sign_int", lambda m, a: m.sign(a), [Int(-5, 5)], grad=False, fd=False),
    # sgn of a real tensor is sign (zero gradient: torch's is a ZeroTensor, so added to a
    # differentiable term); complex sgn: tests/ops/test_complex_products_and_reductions.py
    OpSpec("ew_sgn", lambda m, a: m.sgn(a) + a, [NZ]),
    OpSpec("ew_abs_operator", lambda m, a: abs(a), [NZ]),
    # activations
    OpSpec("ew_relu", lambda m, a: F(m).relu(a), [NZ]),
    OpSpec("ew_relu_method", lambda m, a: a.relu(), [NZ]),
    OpSpec("ew_relu_inplace_graph", lambda m, a: (a * 1).relu_(), [NZ]),
    OpSpec("ew_relu_int", lambda m, a: m.relu(a), [Int(-5, 5)], grad=False, fd=False),
    OpSpec("ew_relu6", lambda m, a: F(m).relu6(a), [U(-3, 9)]),
    OpSpec("ew_gelu", lambda m, a: F(m).gelu(a), [N]),
    OpSpec("ew_gelu_wide", lambda m, a: F(m).gelu(a), [U(-8, 8, (40,))]),
    OpSpec("ew_gelu_tanh", lambda m, a: F(m).gelu(a, approximate="tanh"), [U(-5, 5)]),
    OpSpec("ew_silu", lambda m, a: F(m).silu(a), [U(-10, 10)]),
    OpSpec("ew_softplus", lambda m, a: F(m).softplus(a), [U(-30, 30)]),
    OpSpec("ew_softplus_beta", lambda m, a: F(m).softplus(a, beta=2.0, threshold=3.0), [U(-3, 3)]),
    OpSpec("ew_leaky_relu", lambda m, a: F(m).leaky_relu(a, 0.1), [NZ]),
    OpSpec("ew_leaky_relu_default", lambda m, a: F(m).leaky_relu(a), [NZ]),
    OpSpec("ew_elu", lambda m, a: F(m).elu(a), [NZ]),
    OpSpec("ew_elu_alpha", lambda m, a: F(m).elu(a, alpha=1.5), [NZ]),
    OpSpec("ew_selu", lambda m, a: F(m).selu(a), [NZ]),
    OpSpec("ew_celu", lambda m, a: F(m).celu(a, alpha=0.7), [NZ], dtype_tol={"float64": (1e-7, 1e-7)},
           notes="torch's float64 celu backward uses 1/alpha in float32 (relative error 2e-8)"),
    OpSpec("ew_mish", lambda m, a: F(m).mish(a), [U(-10, 10)]),
    OpSpec("ew_hardtanh", lambda m, a: F(m).hardtanh(a), [U(-2, 2)]),
    OpSpec("ew_hardtanh_bounds", lambda m, a: F(m).hardtanh(a, -0.5, 0.3), [U(-1, 1)]),
    OpSpec("ew_hardsigmoid", lambda m, a: F(m).hardsigmoid(a), [U(-5, 5)], dtype_tol={"float64": (1e-7, 1e-7)},
           notes="torch's float64 hardsigmoid backward multiplies by 1.0f/6.0f, a float32 constant"),
    OpSpec("ew_hardswish", lambda m, a: F(m).hardswish(a), [U(-5, 5)]),
    OpSpec("ew_logsigmoid", lambda m, a: F(m).logsigmoid(a), [U(-30, 30)]),
    OpSpec("ew_leaky_relu_inplace_graph", lambda m, a: F(m).leaky_relu(a * 1, 0.2, inplace=True), [NZ]),
    # pow
    OpSpec("ew_pow_scalar", lambda m, a: m.pow(a, 2.5), [P]),
    OpSpec("ew_pow_square", lambda m, a: a ** 2, [N]),
    OpSpec("ew_pow_cube", lambda m, a: a ** 3, [N]),
    OpSpec("ew_pow_neg", lambda m, a: a ** -1.5, [P]),
    OpSpec("ew_pow_half", lambda m, a: a ** 0.5, [P]),
    OpSpec("ew_pow_zero", lambda m, a: a ** 0, [N]),
    OpSpec("ew_rpow_scalar", lambda m, a: 2.5 ** a, [N]),
    OpSpec("ew_pow_tensor", lambda m, a, b: m.pow(a, b), [P, N]),
    OpSpec("ew_pow_tensor_bcast", lambda m, a, b: a ** b, [Arg((2, 3, 1), kind="positive"), Arg((4,))]),
    OpSpec("ew_pow_method", lambda m, a: a.pow(3), [N]),
    OpSpec("ew_pow_inplace_graph", lambda m, a: (a * 1).pow_(2), [N]),
    OpSpec("ew_pow_int", lambda m, a: a ** 2, [Int(-5, 5)], grad=False, fd=False),
    OpSpec("ew_rpow_int", lambda m, a: 2 ** a, [Int(0, 5)], grad=False, fd=False),
    OpSpec("ew_pow_int_float_exp", lambda m, a: a ** 1.5, [Int(0, 5)], grad=False, fd=False),
    # clamp
    OpSpec("ew_clamp", lambda m, a: m.clamp(a, -0.5, 0.5), [N]),
    OpSpec("ew_clamp_min", lambda m, a: m.clamp(a, min=0.1), [N]),
    OpSpec("ew_clamp_max", lambda m, a: a.clamp(max=0.2), [N]),
    OpSpec("ew_clip", lambda m, a: m.clip(a, -1.0, 0.0), [N]),
    OpSpec("ew_clamp_tensor", lambda m, a, lo, hi: m.clamp(a, lo, hi),
           [N, Arg((4,), kind="uniform", low=-1.0, high=-0.1), Arg((3, 1), kind="uniform", low=0.1, high=1.0)]),
    OpSpec("ew_clamp_tensor_min", lambda m, a, lo: m.clamp(a, min=lo), [N, Arg((4,))]),
    OpSpec("ew_clamp_tensor_max", lambda m, a, hi: m.clamp(a, max=hi), [N, Arg((3, 1))]),
    OpSpec("ew_clamp_tensor_crossed", lambda m, a, lo, hi: m.clamp(a, lo, hi),
           [N, Arg((3, 4), kind="uniform", low=0.1, high=1.0), Arg((3, 4), kind="uniform", low=-1.0, high=-0.1)]),
    OpSpec("ew_clamp_inplace_graph", lambda m, a: (a * 1).clamp_(-0.5, 0.5), [N]),
    OpSpec("ew_clamp_min_fn", lambda m, a: m.clamp_min(a, 0.0), [NZ]),
    OpSpec("ew_clamp_max_fn", lambda m, a: m.clamp_max(a, 0.0), [NZ]),
    OpSpec("ew_clamp_int_float_bound", lambda m, a: m.clamp(a, min=1.5), [Int(0, 5)], grad=False, fd=False),
    OpSpec("ew_clamp_int", lambda m, a: m.clamp(a, 1, 3), [Int(0, 5)], grad=False, fd=False),
    # maximum / minimum
    OpSpec("ew_maximum", lambda m, a, b: m.maximum(a, b), [N, N]),
    OpSpec("ew_minimum_bcast", lambda m, a, b: m.minimum(a, b), [Arg((2, 3, 4)), Arg((3, 1))]),
    OpSpec("ew_maximum_ties", lambda m, a: m.maximum(a, a), [N]),
    OpSpec("ew_minimum_ties", lambda m, a, b: m.minimum(a, a * 1) * b, [N, N]),
    OpSpec("ew_fmax", lambda m, a, b: m.fmax(a, b), [N, Arg((4,))]),
    OpSpec("ew_fmin", lambda m, a, b: m.fmin(a, b), [N, N]),
    OpSpec("ew_fmax_nan", lambda m, a, b: m.fmax(m.sqrt(a), b), [N, N], fd=False),
    OpSpec("ew_maximum_nan", lambda m, a, b: m.maximum(m.sqrt(a), b), [N, N], grad=False, fd=False),
    OpSpec("ew_maximum_int", lambda m, a, b: m.maximum(a, b), [Int(0, 5), Int(0, 5)], grad=False, fd=False),
    # where
    OpSpec("ew_where", lambda m, c, a, b: m.where(c, a, b), [B, N, N]),
    OpSpec("ew_where_bcast", lambda m, c, a, b: m.where(c, a, b), [Arg((3, 1), kind="bool"), Arg((4,)), N]),
    OpSpec("ew_where_scalar", lambda m, a: m.where(a > 0, a, 0.0), [NZ]),
    OpSpec("ew_where_scalar_first", lambda m, a: m.where(a > 0, 1.5, a), [NZ]),
    OpSpec("ew_where_scalars", lambda m, c: m.where(c, 1.0, 0.0), [B], grad=False, fd=False),
    OpSpec("ew_where_int_scalars", lambda m, c: m.where(c, 1, 0), [B], grad=False, fd=False),
    OpSpec("ew_where_int_float", lambda m, c, a: m.where(c, a, 0.5), [B, Int(0, 5)], grad=False, fd=False),
    OpSpec("ew_where_nonzero", lambda m, c: m.where(c)[1], [B], grad=False, fd=False),
    # lerp
    OpSpec("ew_lerp", lambda m, a, b: m.lerp(a, b, 0.3), [N, N]),
    OpSpec("ew_lerp_big_weight", lambda m, a, b: m.lerp(a, b, 0.8), [N, Arg((4,))]),
    OpSpec("ew_lerp_tensor_weight", lambda m, a, b, w: m.lerp(a, b, w), [N, N, U(0, 1)]),
    OpSpec("ew_lerp_tensor_weight_bcast", lambda m, a, b, w: a.lerp(b, w), [N, N, U(0, 1, (4,))]),
    OpSpec("ew_lerp_inplace_graph", lambda m, a, b: (a * 1).lerp_(b, 0.25), [N, N]),
    # addcmul / addcdiv
    OpSpec("ew_addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), [N, N, N]),
    OpSpec("ew_addcmul_bcast", lambda m, a, b, c: m.addcmul(a, b, c), [N, Arg((4,)), Arg((3, 1))]),
    OpSpec("ew_addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=-2.0), [N, N, NZ]),
    OpSpec("ew_addcdiv_bcast", lambda m, a, b, c: m.addcdiv(a, b, c), [Arg((3, 1)), N, Arg((4,), kind="nonzero")]),
    OpSpec("ew_addcmul_inplace_graph", lambda m, a, b, c: (a * 1).addcmul_(b, c, value=0.1), [N, N, N]),
    OpSpec("ew_addcdiv_inplace_graph", lambda m, a, b, c: (a * 1).addcdiv_(b, c, value=0.1), [N, N, NZ]),
    # division variants
    OpSpec("ew_div_trunc", lambda m, a, b: m.div(a, b, rounding_mode="trunc"), [U(-5, 5), NZ]),
    OpSpec("ew_div_floor", lambda m, a, b: m.div(a, b, rounding_mode="floor"), [U(-5, 5), NZ]),
    OpSpec("ew_div_floor_scalar", lambda m, a: m.div(a, 0.7, rounding_mode="floor"), [U(-5, 5)]),
    OpSpec("ew_div_trunc_int", lambda m, a, b: m.div(a, b, rounding_mode="trunc"), [Int(-9, 9), Int(1, 4)], grad=False, fd=False),
    OpSpec("ew_div_floor_int", lambda m, a, b: m.div(a, b, rounding_mode="floor"), [Int(-9, 9), Int(-4, 0)], grad=False, fd=False),
    OpSpec("ew_div_trunc_int_scalar", lambda m, a: m.div(a, -3, rounding_mode="trunc"), [Int(-9, 9)], grad=False, fd=False),
    OpSpec("ew_floor_divide", lambda m, a, b: m.floor_divide(a, b), [U(-5, 5), NZ], grad=False, fd=False),
    OpSpec("ew_floordiv_operator_int", lambda m, a: a // 3, [Int(-9, 9)], grad=False, fd=False),
    OpSpec("ew_rfloordiv_int", lambda m, a: 7 // a, [Int(1, 9)], grad=False, fd=False),
    OpSpec("ew_remainder", lambda m, a, b: m.remainder(a, b), [U(-5, 5), NZ]),
    OpSpec("ew_remainder_scalar", lambda m, a: a % 0.7, [U(-5, 5)]),
    OpSpec("ew_rmod_scalar", lambda m, a: 2.5 % a, [NZ], grad=False, fd=False),  # torch: no derivative
    OpSpec("ew_fmod", lambda m, a, b: m.fmod(a, b), [U(-5, 5), NZ]),
    OpSpec("ew_fmod_scalar", lambda m, a: m.fmod(a, -0.7), [U(-5, 5)]),
    OpSpec("ew_remainder_int", lambda m, a: a % 4, [Int(-9, 9)], grad=False, fd=False),
    OpSpec("ew_fmod_int", lambda m, a, b: m.fmod(a, b), [Int(-9, 9), Int(1, 4)], grad=False, fd=False),
    # comparisons and tests (bool outputs)
    OpSpec("ew_eq", lambda m, a, b: m.eq(a, b), [Int(0, 3), Int(0, 3)], grad=False, fd=False),
    OpSpec("ew_ne_operator", lambda m, a, b: a != b, [Int(0, 3), Int(0, 3)], grad=False, fd=False),
    OpSpec("ew_eq_scalar", lambda m, a: a == 1, [Int(0, 3)], grad=False, fd=False),
    OpSpec("ew_lt", lambda m, a, b: m.lt(a, b), [N, N], grad=False, fd=False),
    OpSpec("ew_le_bcast", lambda m, a, b: a <= b, [N, Arg((4,))], grad=False, fd=False),
    OpSpec("ew_gt_scalar", lambda m, a: a > 0.1, [N], grad=False, fd=False),
    OpSpec("ew_ge_method", lambda m, a, b: a.ge(b), [N, N], grad=False, fd=False),
    OpSpec("ew_rgt_scalar", lambda m, a: 0.2 < a, [N], grad=False, fd=False),
    OpSpec("ew_cmp_mixed_dtype", lambda m, a, b: m.gt(a, b), [N, Int(-1, 2)], grad=False, fd=False),
    OpSpec("ew_isnan", lambda m, a: m.isnan(m.log(a)), [N], grad=False, fd=False),
    OpSpec("ew_isinf", lambda m, a: m.isinf(m.exp(a * 100)), [N], grad=False, fd=False),
    OpSpec("ew_isfinite", lambda m, a: m.isfinite(m.exp(a * 100) - m.sqrt(a)), [N], grad=False, fd=False),
    OpSpec("ew_isclose", lambda m, a, b: m.isclose(a, a + b * 1e-5), [N, N], grad=False, fd=False),
    OpSpec("ew_allclose_true", lambda m, a: m.allclose(a, a * (1 + 1e-7)), [N], grad=False, fd=False),
    OpSpec("ew_allclose_false", lambda m, a, b: m.allclose(a, b), [N, N], grad=False, fd=False),
    OpSpec("ew_equal", lambda m, a: m.equal(a, a * 1), [N], grad=False, fd=False),
    OpSpec("ew_equal_false", lambda m, a, b: m.equal(a, b), [N, N], grad=False, fd=False),
    OpSpec("ew_nan_to_num", lambda m, a: m.nan_to_num(m.log(a), nan=0.5, neginf=-3.0), [N], fd=False),
    # logical and bitwise
    OpSpec("ew_logical_and", lambda m, a, b: m.logical_and(a, b), [B, B], grad=False, fd=False),
    OpSpec("ew_logical_or_float", lambda m, a, b: m.logical_or(a > 0, b), [N, Int(0, 2)], grad=False, fd=False),
    OpSpec("ew_logical_xor", lambda m, a, b: m.logical_xor(a, b), [B, B], grad=False, fd=False),
    OpSpec("ew_logical_not", lambda m, a: m.logical_not(a), [Int(0, 2)], grad=False, fd=False),
    OpSpec("ew_bitwise_and_op", lambda m, a, b: a & b, [B, B], grad=False, fd=False),
    OpSpec("ew_bitwise_or_op", lambda m, a, b: a | b, [B, Arg((4,), kind="bool")], grad=False, fd=False),
    OpSpec("ew_bitwise_xor_op", lambda m, a, b: a ^ b, [Int(0, 16), Int(0, 16)], grad=False, fd=False),
    OpSpec("ew_bitwise_not_bool", lambda m, a: ~a, [B], grad=False, fd=False),
    OpSpec("ew_bitwise_not_int", lambda m, a: ~a, [Int(-9, 9)], grad=False, fd=False),
    OpSpec("ew_bitwise_and_scalar", lambda m, a: a & 6, [Int(0, 16)], grad=False, fd=False),
    OpSpec("ew_bitwise_bool_int", lambda m, a, b: m.bitwise_and(a, b), [B, Int(0, 4)], grad=False, fd=False),
    OpSpec("ew_bitwise_or_bool_scalar", lambda m, a: a | True, [B], grad=False, fd=False),
    OpSpec("ew_mask_chain", lambda m, a: (a > 0) & ~(a > 1), [N], grad=False, fd=False),
]

# In-place forms on an intermediate (the graph is rewritten, as PyTorch's history rebase):
# each is the out-of-place op's spec through ``(a * 1).op_()``.
_inplace_unary = [
    ("cos_", N), ("cosh_", N), ("sin_", N), ("sinh_", N), ("tan_", U(-1, 1)), ("erf_", N), ("erfc_", N),
    ("exp2_", N), ("expm1_", N), ("square_", N), ("log_", P), ("log2_", P), ("log10_", P), ("log1p_", P),
    ("rsqrt_", P), ("sign_", NZ),
]
SPECS += [OpSpec(f"ew_{name}graph", (lambda n: lambda m, a: getattr(a * 1, n)())(name), [arg])
          for name, arg in _inplace_unary]

# rounding in place: zero gradient through the rounded value, plus the input's own path
_inplace_rounding = ["ceil_", "trunc_", "fix_", "round_", "frac_"]
SPECS += [OpSpec(f"ew_{name}graph", (lambda n: lambda m, a: getattr(a * 1, n)() + a)(name), [U(-3, 3)])
          for name in _inplace_rounding]

SPECS += [
    OpSpec("ew_clamp_min_inplace", lambda m, a: (a * 1).clamp_min_(0.1), [N]),
    OpSpec("ew_clamp_max_inplace", lambda m, a: (a * 1).clamp_max_(-0.2), [N]),
    OpSpec("ew_fmod_inplace", lambda m, a: (a * 1).fmod_(0.7), [U(-5, 5)]),
    OpSpec("ew_remainder_inplace", lambda m, a: (a * 1).remainder_(0.7), [U(-5, 5)]),
    OpSpec("ew_floor_divide_inplace", lambda m, a: (a * 1).floor_divide_(0.7), [U(-5, 5, (3, 4))],
           grad=False, fd=False, notes="torch: derivative for floor_divide_ is not implemented"),
    OpSpec("ew_nan_to_num_inplace", lambda m, a: m.log(a * 1).nan_to_num_(nan=0.5, neginf=-3.0), [N], fd=False),
    OpSpec("ew_elu_inplace", lambda m, a: F(m).elu_(a * 1, alpha=0.5), [NZ]),
    OpSpec("ew_selu_inplace", lambda m, a: F(m).selu_(a * 1), [NZ]),
    OpSpec("ew_leaky_relu_inplace", lambda m, a: F(m).leaky_relu_(a * 1, 0.1), [NZ]),
    OpSpec("ew_hardtanh_inplace", lambda m, a: F(m).hardtanh_(a * 1, -0.4, 0.6), [U(-1, 1)]),
    OpSpec("ew_isposinf", lambda m, a: m.isposinf(m.exp(a * 100.0)), [N], grad=False, fd=False),
    OpSpec("ew_isneginf", lambda m, a: m.isneginf(-m.exp(a * 100.0)), [N], grad=False, fd=False),
    OpSpec("ew_bitwise_and_inplace", lambda m, a, b: (a + 0).bitwise_and_(b), [Int(0, 16), Int(0, 16)],
           grad=False, fd=False),
    OpSpec("ew_bitwise_or_inplace", lambda m, a, b: (a + 0).bitwise_or_(b), [Int(0, 16), Int(0, 16)],
           grad=False, fd=False),
    OpSpec("ew_bitwise_xor_inplace", lambda m, a, b: (a + 0).bitwise_xor_(b), [Int(0, 16), Int(0, 16)],
           grad=False, fd=False),
    OpSpec("ew_bitwise_not_inplace", lambda m, a: (a + 0).bitwise_not_(), [Int(-9, 9)], grad=False, fd=False),
]
