"""Specs for kron, tensordot, cross, linalg.cross, addmv, addr
(shardflow/ops/tensor_products.py) and the mixed-dtype promotion PyTorch does in
``outer``/``ger``/``kron``/``addr`` (``outer(arange(T), freqs)`` in rotary-embedding code
is int64 x float32 -> float32). The products that PyTorch does not promote (mm, mv, dot,
bmm, einsum, tensordot, cross, addmv) raise for mixed dtypes; that is checked in
tests/ops/test_complex_misc.py."""

import torch

from shardflow.testing.opspec import Arg, OpSpec

IDX = Arg((4,), kind="int", low=-3, high=4)


def lcross(m):
    return m.linalg.cross if m is torch else m.linalg_cross


SPECS = [
    OpSpec("outer_int_float_promotes", lambda m, i, a: m.outer(i, a), [IDX, Arg((3,))]),
    OpSpec("ger_float_int_promotes", lambda m, a, i: a.ger(i), [Arg((3,)), IDX]),
    OpSpec("outer_float32_float64", lambda m, a, b: m.outer(a, b), [Arg((3,)), Arg((2,), dtype="float64")]),
    OpSpec("kron_2d", lambda m, a, b: m.kron(a, b), [Arg((2, 3)), Arg((3, 2))]),
    OpSpec("kron_rank_mismatch", lambda m, a, b: m.kron(a, b), [Arg((2,)), Arg((2, 2, 3))]),
    OpSpec("kron_int_float_promotes", lambda m, i, a: m.kron(i, a), [IDX, Arg((2, 2))]),
    OpSpec("tensordot_int_dims", lambda m, a, b: m.tensordot(a, b, dims=2), [Arg((2, 3, 4)), Arg((3, 4, 5))]),
    OpSpec("tensordot_dim_lists", lambda m, a, b: m.tensordot(a, b, dims=([0, 2], [2, 1])), [Arg((2, 3, 4)), Arg((5, 4, 2))]),
    OpSpec("tensordot_outer", lambda m, a, b: m.tensordot(a, b, dims=0), [Arg((2,)), Arg((3,))]),
    OpSpec("cross_dim", lambda m, a, b: m.cross(a, b, dim=1), [Arg((2, 3, 4)), Arg((2, 3, 4))]),
    OpSpec("cross_broadcast_method", lambda m, a, b: a.cross(b, dim=-1), [Arg((4, 3)), Arg((1, 3))]),
    OpSpec("linalg_cross", lambda m, a, b: lcross(m)(a, b), [Arg((2, 3)), Arg((2, 3))]),
    OpSpec("addmv", lambda m, c, a, v: m.addmv(c, a, v, beta=0.5, alpha=2.0), [Arg((3,)), Arg((3, 4)), Arg((4,))]),
    OpSpec("addr", lambda m, c, u, v: m.addr(c, u, v, alpha=1.5), [Arg((3, 4)), Arg((3,)), Arg((4,))]),
]
