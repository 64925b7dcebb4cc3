"""ops/tensor_aliases.py beyond the spec table (tests/ops/specs/tensor_aliases.py): errors,
copy semantics, ``to_sparse_coo`` and which forms exist, each against torch 2.13."""
import numpy as np
import pytest
import torch

import shardflow as sf

NAMES = ["isreal", "is_neg", "adjoint", "narrow_copy", "unsafe_chunk", "unsafe_split",
         "unsafe_split_with_sizes", "to_sparse_coo"]


@pytest.mark.parametrize("name", NAMES)
def test_same_forms_as_torch(name):
    assert hasattr(sf.Tensor, name) == hasattr(torch.Tensor, name) is True
    assert hasattr(sf, name) == hasattr(torch, name)


def test_adjoint_of_a_vector_is_torchs_error():
    for lib in (sf, torch):
        with pytest.raises(RuntimeError, match=r"adjoint\(\) is only supported on matrices or batches of matrices. "
                                               r"Got 1-D tensor"):
            lib.adjoint(lib.ones(3))


def test_narrow_copy_does_not_share_memory():
    for lib in (sf, torch):
        a = lib.arange(6.0).reshape(2, 3)
        c = a.narrow_copy(1, 1, 2)
        c[0, 0] = 100.0
        assert float(a[0, 1]) == 1.0
        view = a.narrow(1, 1, 2)
        view[0, 0] = 100.0
        assert float(a[0, 1]) == 100.0  # narrow itself is a view


def test_unsafe_split_gradient_flows_like_torch():
    grads = []
    for lib in (sf, torch):
        a = lib.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
        parts = a.unsafe_split(2)
        (parts[0].sum() * 2 + (parts[1] ** 2).sum()).backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_to_sparse_coo_matches_torch():
    dense = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 4.0]], dtype=np.float32)
    ours, ref = sf.tensor(dense).to_sparse_coo(), torch.tensor(dense).to_sparse_coo()
    assert ours.layout == sf.sparse_coo and ref.layout == torch.sparse_coo
    np.testing.assert_array_equal(ours.indices().numpy(), ref.indices().numpy())
    np.testing.assert_array_equal(ours.values().numpy(), ref.values().numpy())
    np.testing.assert_array_equal(ours.to_dense().numpy(), dense)


def test_is_neg_is_false_and_isreal_is_bool_like_torch():
    for lib in (sf, torch):
        a = lib.ones(2, 2)
        assert lib.is_neg(a) is False and a.is_neg() is False
        assert lib.isreal(a).dtype == lib.bool
        assert lib.isreal(lib.tensor([1 + 0j, 1 + 1j])).tolist() == [True, False]
