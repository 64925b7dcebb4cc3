"""Specs for creation and copy ops (shardflow/ops/creation.py, conversion.py): values and
default dtypes against PyTorch; copies also carry gradients (clone, contiguous, copy_)."""

import numpy as np

from shardflow.testing.opspec import Arg, OpSpec

_NO_GRAD = dict(grad=False, fd=False)

SPECS = [
    # factories: no inputs; what is compared is the values and the default dtype
    OpSpec("arange_int", lambda m: m.arange(2, 11, 3), [], **_NO_GRAD),
    OpSpec("arange_float_step", lambda m: m.arange(0.0, 1.0, 0.25), [], **_NO_GRAD),
    OpSpec("arange_end_only", lambda m: m.arange(5), [], **_NO_GRAD),
    OpSpec("linspace", lambda m: m.linspace(-1.0, 2.0, 7), [], **_NO_GRAD),
    OpSpec("eye_rect", lambda m: m.eye(3, 4), [], **_NO_GRAD),
    OpSpec("full_float", lambda m: m.full((2, 3), 1.5), [], **_NO_GRAD),
    OpSpec("full_int_value", lambda m: m.full((2,), 7), [], **_NO_GRAD),
    OpSpec("as_tensor_list", lambda m: m.as_tensor([[1.0, 2.5], [3.0, -4.0]]), [], **_NO_GRAD),
    OpSpec("from_numpy_float64", lambda m: m.from_numpy(np.arange(6.0).reshape(2, 3)), [], **_NO_GRAD),
    # *_like: shape and dtype follow the input
    OpSpec("zeros_like", lambda m, a: m.zeros_like(a), [Arg((2, 3))], **_NO_GRAD),
    OpSpec("ones_like", lambda m, a: m.ones_like(a), [Arg((2, 3))], **_NO_GRAD),
    OpSpec("full_like", lambda m, a: m.full_like(a, 2.5), [Arg((3, 2))], **_NO_GRAD),
    OpSpec("zeros_like_int", lambda m, a: m.zeros_like(a), [Arg((4,), kind="int", low=0, high=9)], **_NO_GRAD),
    # copies: the gradient flows through
    OpSpec("clone", lambda m, a: m.clone(a) * 2, [Arg((3, 4))]),
    OpSpec("contiguous_of_transpose", lambda m, a: a.transpose(0, 1).contiguous(), [Arg((3, 4))]),
    OpSpec("copy_into_intermediate", lambda m, a, b: (b * 1).copy_(a) * b, [Arg((3, 4)), Arg((3, 4))]),
    OpSpec("copy_broadcast", lambda m, a, b: (b * 1).copy_(a), [Arg((4,)), Arg((3, 4))]),
    OpSpec("fill_intermediate", lambda m, a: (a * 1).fill_(0.5) + a, [Arg((2, 3))]),
]
