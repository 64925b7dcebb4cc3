"""``torch.einsum``'s sublist form (``einsum(a, [0, 1], b, [1, 2], [0, 2])``) against torch 2.13:
values and gradients; it used to raise a TypeError."""

import numpy as np
import pytest
import torch

import shardflow as sf

A = np.arange(6.0).reshape(2, 3)
B = np.arange(12.0).reshape(3, 4) / 10

CASES = [
    ("matmul", lambda m, a, b: (a, [0, 1], b, [1, 2], [0, 2])),
    ("implicit_output", lambda m, a, b: (a, [0, 1], b, [1, 2])),
    ("ellipsis", lambda m, a, b: (a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2])),
    ("reduce", lambda m, a, b: (a, [0, 1], [1])),
    ("upper_letters", lambda m, a, b: (a, [30, 1], b, [1, 51], [51, 30])),
]


@pytest.mark.parametrize("name, args", CASES, ids=[c[0] for c in CASES])
def test_sublist_form_matches_torch(name, args):
    outs = []
    for m in (torch, sf):
        a, b = m.tensor(A, requires_grad=True), m.tensor(B, requires_grad=True)
        y = m.einsum(*args(m, a, b))
        (y * y).sum().backward()
        outs.append([y.detach().numpy(), a.grad.numpy(), None if b.grad is None else b.grad.numpy()])
    for got, want in zip(outs[1], outs[0], strict=True):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12)


def test_sublist_form_refuses_bad_subscripts_as_torch():
    for m in (torch, sf):
        with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
            m.einsum(m.ones(2), [52])
