"""The ``*_copy`` forms of the view ops against torch 2.13: values, new memory (not a view),
gradients, ``out=`` and errors."""

import numpy as np
import pytest
import torch

import shardflow as sf

X = np.arange(24.0).reshape(2, 3, 4)

# name, args after the input (same for both libraries), input array
CASES = [
    ("alias_copy", (), X),
    ("diagonal_copy", (1, 1, 2), X),
    ("expand_copy", ((2, 2, 3, 4),), X),
    ("permute_copy", ((2, 0, 1),), X),
    ("select_copy", (1, 2), X),
    ("slice_copy", (2, 1, 4, 2), X),
    ("squeeze_copy", (), X.reshape(2, 1, 12)),
    ("squeeze_copy", (1,), X.reshape(2, 1, 12)),
    ("t_copy", (), X[0]),
    ("transpose_copy", (0, 2), X),
    ("unfold_copy", (2, 2, 1), X),
    ("unsqueeze_copy", (-1,), X),
    ("view_copy", ((4, 6),), X),
    ("as_strided_copy", ((3, 2), (2, 5), 1), X),
]


@pytest.mark.parametrize("name, args, x", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_values_memory_and_gradient_match_torch(name, args, x):
    s, t = sf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_s, out_t = getattr(sf, name)(s, *args), getattr(torch, name)(t, *args)
    np.testing.assert_array_equal(out_s.detach().numpy(), out_t.detach().numpy())
    assert out_s.is_contiguous()
    assert not np.shares_memory(out_s.detach().numpy(), s.detach().numpy())
    w = np.arange(out_t.numel(), dtype=np.float64).reshape(tuple(out_t.shape))
    (out_s * sf.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(s.grad.numpy(), t.grad.numpy())


def test_view_copy_of_a_transposed_input_and_of_a_dtype():
    s, t = sf.arange(6.0).reshape(2, 3).t(), torch.arange(6.0).reshape(2, 3).t()
    np.testing.assert_array_equal(sf.view_copy(s, (6,)).numpy(), torch.view_copy(t, (6,)).numpy())
    np.testing.assert_array_equal(sf.view_copy(sf.arange(4.0), sf.int32).numpy(),
                                  torch.view_copy(torch.arange(4.0), torch.int32).numpy())


def test_list_forms_and_their_out():
    for name, args in (("split_copy", (2,)), ("split_with_sizes_copy", ([1, 4],)), ("unbind_copy", (0,))):
        s, t = getattr(sf, name)(sf.arange(5.0), *args), getattr(torch, name)(torch.arange(5.0), *args)
        assert [p.tolist() for p in s] == [p.tolist() for p in t]
    outs_s, outs_t = [sf.empty(0), sf.empty(0)], [torch.empty(0), torch.empty(0)]
    assert sf.unbind_copy(sf.ones(2, 2), 0, out=outs_s) is None
    torch.unbind_copy(torch.ones(2, 2), 0, out=outs_t)
    assert [p.tolist() for p in outs_s] == [p.tolist() for p in outs_t]


def test_out_is_resized_and_a_wrong_dtype_is_refused_like_torch():
    out = sf.empty(0)
    assert sf.t_copy(sf.ones(2, 3), out=out) is out and tuple(out.shape) == (3, 2)
    for lib in (sf, torch):
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got long int instead"):
            lib.t_copy(lib.ones(2, 3), out=lib.empty(3, 2, dtype=lib.int64))


def test_detach_copy_and_complex_and_sparse_parts():
    d = sf.detach_copy(sf.ones(2, requires_grad=True))
    assert not d.requires_grad
    z = np.array([1 + 2j, 3 - 1j])
    np.testing.assert_array_equal(sf.view_as_real_copy(sf.tensor(z)).numpy(),
                                  torch.view_as_real_copy(torch.tensor(z)).numpy())
    r = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_array_equal(sf.view_as_complex_copy(sf.tensor(r)).numpy(),
                                  torch.view_as_complex_copy(torch.tensor(r)).numpy())
    sp = sf.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2)).coalesce()
    assert sf.indices_copy(sp).tolist() == [[0, 1], [1, 0]] and sf.values_copy(sp).tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="sparse COO"):
        sf.values_copy(sf.ones(2))


def test_view_op_errors_carry_over():
    for lib in (sf, torch):
        with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
            lib.view_copy(lib.ones(2, 3), (4,))
