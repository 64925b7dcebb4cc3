"""Found by running the same snippets on PyTorch 2.13 and shardflow (session 30): which
results are copies, views or contiguous, comparisons with non-tensors, and a few forms of
``norm``/``scatter`` that were refused."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.backend import user_warning

M = np.arange(9.0).reshape(3, 3)


def test_diag_of_a_matrix_is_a_copy():
    # it was a view: `d = m.diag(); d += 100` changed m, silently
    for lib in (torch, sf):
        m = lib.tensor(M)
        d = m.diag(1)
        d += 100
        assert m.tolist() == M.tolist() and d.is_contiguous()


def test_a_contraction_by_einsum_is_contiguous_so_view_works():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    outs = []
    for lib in (torch, sf):
        t = lib.tensor(x)
        e = lib.einsum("bij,bjk->bik", t[:, :, :3], t[:, :3, :])
        assert e.is_contiguous()
        outs.append(e.view(2, -1).tolist())  # raised "view size is not compatible" before
    assert outs[0] == outs[1]


@pytest.mark.parametrize("other", [None, [1, 2], (1, 2), "a"])
def test_comparing_with_a_non_tensor_is_pythons_identity(other):
    for lib in (torch, sf):
        t = lib.tensor([1, 2])
        assert (t == other) is False and (t != other) is True


def test_norm_nuc():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]])
    want = torch.norm(torch.tensor(a, requires_grad=True), p="nuc")
    t = sf.tensor(a, requires_grad=True)
    got = sf.norm(t, p="nuc")
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    want.backward()
    got.backward()
    tt = torch.tensor(a, requires_grad=True)
    torch.norm(tt, p="nuc").backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-10)


def test_scatter_reduce_multiply_and_its_warning():
    for lib in (torch, sf):
        assert lib.ones(3).scatter(0, lib.tensor([0, 2]), 2.0, reduce="multiply").tolist() == [2.0, 1.0, 2.0]
        y = lib.full((3,), 2.0)
        y.scatter_(0, lib.tensor([0, 0]), lib.tensor([3.0, 4.0]), reduce="multiply")
        assert y.tolist() == [24.0, 2.0, 2.0]
    sf.ops.index._warned_reduce_with_tensor = False
    with pytest.warns(UserWarning, match="reduce argument of torch.scatter with Tensor src is deprecated"):
        sf.ones(3).scatter(0, sf.tensor([1]), sf.tensor([5.0]), reduce="add")


def test_T_of_a_tensor_not_2d_warns_once_as_torch():

    user_warning._given -= {"T_0d", "T_nd"}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert sf.zeros(2, 3, 4).T.shape == (4, 3, 2)
        sf.zeros(2, 3, 4).T
        sf.tensor(1.0).T
        sf.zeros(2, 3).T
    msgs = [str(w.message) for w in rec]
    assert len(msgs) == 2 and "`x.T` on tensors of dimension other than 2" in msgs[0] and "0-D" in msgs[1]
