"""Specs for ops/strided.py (as_strided and its forms) and ops/view_copies.py (the ``*_copy``
forms of the view ops): values and gradients against torch 2.13."""

from shardflow.testing.opspec import Arg, OpSpec


def _as_strided_in_place(m, a):
    b = a * 1
    b.as_strided_((3, 2), (2, 3), 1)
    return b


SPECS = [
    OpSpec("as_strided_overlapping", lambda m, a: m.as_strided(a * 2, (3, 3), (1, 2), 1), [Arg((3, 4))]),
    OpSpec("as_strided_method_of_a_slice", lambda m, a: a[1:].as_strided((2, 2), (3, 1)), [Arg((3, 4))]),
    OpSpec("as_strided_in_place", _as_strided_in_place, [Arg((2, 5))]),
    # the gradient is checked in tests/ops/test_as_strided.py (torch 2.13's is wrong for `input`)
    OpSpec("as_strided_scatter", lambda m, a, b: m.as_strided_scatter(a, b, (2, 2), (1, 3), 1),
           [Arg((2, 4)), Arg((2, 2))], grad=False, fd=False),
    OpSpec("as_strided_copy", lambda m, a: m.as_strided_copy(a, (2, 3), (2, 1)), [Arg((2, 4))]),
    OpSpec("alias_copy", lambda m, a: m.alias_copy(a), [Arg((2, 3))]),
    # torch 2.13's detach_copy output claims a gradient whose backward raises "not implemented";
    # shardflow's has none, like detach()
    OpSpec("detach_copy", lambda m, a: m.detach_copy(a), [Arg((2, 3))], grad=False, fd=False),
    OpSpec("diagonal_copy", lambda m, a: m.diagonal_copy(a, 1, 0, 2), [Arg((3, 2, 4))]),
    OpSpec("expand_copy", lambda m, a: m.expand_copy(a, (2, 3, 4)), [Arg((3, 1))]),
    OpSpec("permute_copy", lambda m, a: m.permute_copy(a, (1, 2, 0)), [Arg((2, 3, 4))]),
    OpSpec("select_copy", lambda m, a: m.select_copy(a, 1, -1), [Arg((2, 3, 4))]),
    OpSpec("slice_copy", lambda m, a: m.slice_copy(a, 1, 1, None, 2), [Arg((2, 6))]),
    OpSpec("split_copy", lambda m, a: tuple(m.split_copy(a, 2, 1)), [Arg((2, 5))]),
    OpSpec("split_with_sizes_copy", lambda m, a: tuple(m.split_with_sizes_copy(a, [1, 2])), [Arg((3, 2))]),
    OpSpec("squeeze_copy", lambda m, a: m.squeeze_copy(a, 1), [Arg((2, 1, 3))]),
    OpSpec("t_copy", lambda m, a: m.t_copy(a), [Arg((2, 3))]),
    OpSpec("transpose_copy", lambda m, a: m.transpose_copy(a, 0, -1), [Arg((2, 3, 4))]),
    OpSpec("unbind_copy", lambda m, a: tuple(m.unbind_copy(a, 1)), [Arg((2, 3))]),
    OpSpec("unfold_copy", lambda m, a: m.unfold_copy(a, 1, 2, 2), [Arg((2, 5))]),
    OpSpec("unsqueeze_copy", lambda m, a: m.unsqueeze_copy(a, 0), [Arg((2, 3))]),
    OpSpec("view_copy", lambda m, a: m.view_copy(a.t(), (6,)), [Arg((2, 3))]),
    OpSpec("view_as_real_copy", lambda m, a: m.view_as_real_copy(m.complex(a[..., 0], a[..., 1])) * 1,
           [Arg((3, 2))], dtypes=("float32", "float64")),
    # torch 2.13 refuses autograd through view_as_complex_copy (shardflow's is view_as_complex's)
    OpSpec("view_as_complex_copy", lambda m, a: m.real(m.view_as_complex_copy(a.detach())) * 1,
           [Arg((3, 2))], dtypes=("float32", "float64"), grad=False, fd=False),
]
