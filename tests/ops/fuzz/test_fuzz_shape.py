"""Differential fuzzing of shape ops against PyTorch (see ``_diff.py``): reshape/view
(with -1), permute, transpose, expand, squeeze/unsqueeze, flatten/unflatten, cat/stack,
split/chunk/tensor_split, flip, roll, repeat, repeat_interleave, tril/triu, diag/diagonal,
narrow, movedim, on empty, size-1 and 0-d tensors, negative dims and non-contiguous
inputs; views are written through afterwards (``x.view(...)[...] = 9``), so a view that
copied (or a copy that aliased) shows up in the input check; backward for float inputs."""

import math

from hypothesis import given
from hypothesis import strategies as st

from ._diff import FLOATS, FUZZ, INTS, check, dim_of, inp

ALL = FLOATS + INTS + ("bool",)


def _write(L, y):
    """Write through a view result (a copy leaves the input alone, a view changes it)."""
    if y.numel():
        y.view(-1)[0] = 1 if y.is_contiguous() else y.flatten()[0]
    return y


def _reshape_target(shape, draw):
    n = math.prod(shape)
    opts = [(n,), (-1,), (1, n), (n, 1, 1), ()] if n == 1 else [(n,), (-1,), (1, n), (n, -1)]
    if n and n % 2 == 0:
        opts += [(2, n // 2), (-1, 2), (2, 1, -1)]
    if n == 0:
        opts += [(0, 3), (3, 0, -1)]
    return draw(st.sampled_from(opts))


SHAPE_OPS = {
    "reshape": lambda L, x, d, dr: x.reshape(_reshape_target(tuple(x.shape), dr)),
    "view_write": lambda L, x, d, dr: _write(L, x.detach().view(_reshape_target(tuple(x.shape), dr)))
    if x.is_contiguous() else x.view(_reshape_target(tuple(x.shape), dr)),
    "permute": lambda L, x, d, dr: x.permute(*dr(st.permutations(range(x.ndim)))),
    "transpose": lambda L, x, d, dr: x.transpose(d, dr(dim_of(x.ndim))),
    "squeeze": lambda L, x, d, dr: x.squeeze(d), "squeeze_all": lambda L, x, d, dr: x.squeeze(),
    "squeeze_dims": lambda L, x, d, dr: L.squeeze(x, (d,)),
    "unsqueeze": lambda L, x, d, dr: x.unsqueeze(dr(st.integers(-x.ndim - 1, x.ndim))),
    "flatten": lambda L, x, d, dr: L.flatten(x, d), "flatten_rng": lambda L, x, d, dr: x.flatten(0, d),
    "unflatten": lambda L, x, d, dr: x.unflatten(d, (1, -1)) if x.ndim else x.unflatten(0, ()),
    "cat": lambda L, x, d, dr: L.cat([x, x * 2], d), "cat_empty": lambda L, x, d, dr: L.cat([x, x[:0]], 0),
    "stack": lambda L, x, d, dr: L.stack([x, x], dr(st.integers(-x.ndim - 1, x.ndim))),
    "split": lambda L, x, d, dr: L.split(x, 2, d), "split_list": lambda L, x, d, dr: x.split([1, x.shape[d] - 1], d)
    if x.ndim and x.shape[d] >= 1 else x.split(1, d),
    "chunk": lambda L, x, d, dr: L.chunk(x, 3, d), "tensor_split": lambda L, x, d, dr: L.tensor_split(x, 3, d),
    "tensor_split_idx": lambda L, x, d, dr: L.tensor_split(x, [1, -1, 5], d),
    "flip": lambda L, x, d, dr: L.flip(x, (d,)), "flip_all": lambda L, x, d, dr: L.flip(x, list(range(x.ndim))),
    "roll": lambda L, x, d, dr: L.roll(x, dr(st.integers(-5, 5)), d), "roll_flat": lambda L, x, d, dr: L.roll(x, 2),
    "repeat": lambda L, x, d, dr: x.repeat(*([2] + [1] * x.ndim)),
    "repeat_interleave": lambda L, x, d, dr: L.repeat_interleave(x, 2, d),
    "repeat_interleave_flat": lambda L, x, d, dr: L.repeat_interleave(x, 2),
    "tril": lambda L, x, d, dr: L.tril(x, dr(st.integers(-2, 2))), "triu": lambda L, x, d, dr: L.triu(x, dr(st.integers(-2, 2))),
    "diag": lambda L, x, d, dr: L.diag(x, dr(st.integers(-2, 2))),
    "diagonal": lambda L, x, d, dr: L.diagonal(x, dr(st.integers(-2, 2)), d, dr(dim_of(x.ndim))),
    "narrow": lambda L, x, d, dr: L.narrow(x, d, dr(st.integers(-2, 2)), dr(st.integers(0, 2))),
    "movedim": lambda L, x, d, dr: L.movedim(x, d, dr(dim_of(x.ndim))),
    "expand": lambda L, x, d, dr: x.unsqueeze(0).expand(2, *([-1] * x.ndim)),
    "expand_as": lambda L, x, d, dr: x[..., :1].expand(*x.shape) if x.ndim else x.expand(()),
    "t": lambda L, x, d, dr: x.t(), "mT": lambda L, x, d, dr: x.mT,
    "swapaxes": lambda L, x, d, dr: L.swapaxes(x, d, 0), "unbind": lambda L, x, d, dr: L.unbind(x, d),
    "contiguous_write": lambda L, x, d, dr: x.detach().contiguous().mul_(2),
    "clone_write": lambda L, x, d, dr: x.detach().clone().add_(1),
    "view_as_real_like": lambda L, x, d, dr: x.reshape(-1).view(1, -1)[0],
    "atleast_2d": lambda L, x, d, dr: L.atleast_2d(x), "ravel": lambda L, x, d, dr: L.ravel(x),
    "rot90": lambda L, x, d, dr: L.rot90(x, dr(st.integers(-3, 3)), (0, 1)) if x.ndim >= 2 else L.rot90(x, 1, (0, 1)),
}


@FUZZ
@given(name=st.sampled_from(sorted(SHAPE_OPS)), x=inp(dtypes=ALL), data=st.data(), grad=st.booleans())
def test_shape_op(name, x, data, grad):
    d = data.draw(dim_of(x.values.ndim))
    seen = []

    def dr(s):  # same drawn argument in both libraries: draw once, replay
        if len(seen) < len(dr.calls) + 1:
            seen.append(data.draw(s))
        dr.calls.append(0)
        return seen[len(dr.calls) - 1]

    def f(L, t):
        dr.calls = []
        return SHAPE_OPS[name](L, t, d, dr)

    check(f, [x], grad=grad and x.values.dtype.kind == "f")
