"""Specs for ops/tensor_aliases.py: torch's other names for existing ops (values and
gradients against torch 2.13, top-level and method forms)."""

from shardflow.testing.opspec import Arg, OpSpec

C = ("float32", "float64")  # torch has no complex bfloat16


def _z_some_real(m, a):
    """A complex (3, 4) tensor whose odd columns have imaginary part 0."""
    keep = m.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=a.dtype)
    return m.complex(a[..., 0], a[..., 1] * keep)


SPECS = [
    OpSpec("isreal_complex", lambda m, a: m.isreal(_z_some_real(m, a)), [Arg((3, 4, 2))],
           grad=False, fd=False, dtypes=C),
    OpSpec("isreal_real_method", lambda m, a: a.isreal(), [Arg((2, 3))], grad=False, fd=False),
    OpSpec("is_neg", lambda m, a: m.full((1,), 2.0 + float(m.is_neg(a)) + float(a.is_neg())),
           [Arg((2, 2))], grad=False, fd=False),
    OpSpec("adjoint_real", lambda m, a: m.adjoint(a) * 2, [Arg((2, 3, 4))]),
    # "* 1": torch's imag of a conjugate view is a negative-bit view, which .numpy() refuses
    OpSpec("adjoint_complex_method", lambda m, a: (m.real(m.complex(a[..., 0], a[..., 1]).adjoint()),
                                                   m.imag(m.complex(a[..., 0], a[..., 1]).adjoint()) * 1),
           [Arg((3, 4, 2))], dtypes=C),
    OpSpec("narrow_copy", lambda m, a: m.narrow_copy(a, 1, 1, 2) * 3, [Arg((3, 4))]),
    OpSpec("narrow_copy_method", lambda m, a: a.narrow_copy(-1, 0, 3), [Arg((2, 5))]),
    OpSpec("unsafe_chunk", lambda m, a: tuple(m.unsafe_chunk(a, 3, 1)), [Arg((2, 7))]),
    OpSpec("unsafe_chunk_method", lambda m, a: tuple(a.unsafe_chunk(2)), [Arg((5, 2))]),
    OpSpec("unsafe_split", lambda m, a: tuple(m.unsafe_split(a, 2, -1)), [Arg((3, 5))]),
    OpSpec("unsafe_split_method", lambda m, a: tuple(a.unsafe_split(1)), [Arg((3, 2))]),
    OpSpec("unsafe_split_with_sizes", lambda m, a: tuple(m.unsafe_split_with_sizes(a, [1, 3], 1)),
           [Arg((2, 4))]),
    OpSpec("unsafe_split_with_sizes_method", lambda m, a: tuple(a.unsafe_split_with_sizes([2, 1])),
           [Arg((3, 2))]),
]
