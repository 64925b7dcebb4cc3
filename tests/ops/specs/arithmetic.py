from shardflow.testing.opspec import Arg, OpSpec

SPECS = [
    OpSpec("add", lambda m, a, b: m.add(a, b), [Arg((3, 4)), Arg((4,))]),
    OpSpec("add_alpha", lambda m, a, b: m.add(a, b, alpha=2.5), [Arg((3, 4)), Arg((3, 1))]),
    OpSpec("add_scalar", lambda m, a: a + 2.0, [Arg((3, 4))]),
    OpSpec("radd_scalar", lambda m, a: 3 + a, [Arg((2, 3))]),
    OpSpec("sub", lambda m, a, b: a - b, [Arg((2, 3, 4)), Arg((3, 1))]),
    OpSpec("rsub_scalar", lambda m, a: 1.5 - a, [Arg((5,))]),
    OpSpec("mul", lambda m, a, b: a * b, [Arg((2, 1, 4)), Arg((3, 1))]),
    OpSpec("mul_scalar", lambda m, a: a * 3, [Arg((4,))]),
    OpSpec("div", lambda m, a, b: a / b, [Arg((3, 4)), Arg((4,), kind="nonzero")]),
    OpSpec("rdiv_scalar", lambda m, a: 2.0 / a, [Arg((3,), kind="nonzero")]),
    OpSpec("neg", lambda m, a: -a, [Arg((3, 2))]),
    OpSpec("reciprocal", lambda m, a: m.reciprocal(a), [Arg((3, 2), kind="nonzero")]),
    OpSpec("int_div_to_float", lambda m, a, b: m.div(a, b), [Arg((4,), kind="int", low=1, high=9), Arg((4,), kind="int", low=1, high=5)], grad=False, fd=False),
    OpSpec("int_plus_float_scalar", lambda m, a: a + 0.5, [Arg((4,), kind="int", low=0, high=9)], grad=False, fd=False),
]
