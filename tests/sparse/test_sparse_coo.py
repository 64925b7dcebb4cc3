"""Sparse COO tensors against torch: construction, metadata, coalescing, to_sparse /
to_dense, printing, the gradient of a sparse leaf (sparse, on the leaf's pattern), errors;
the op spec table (tests/ops/specs/sparse.py) covers values and gradients of the products."""

import pickle
import warnings

import numpy as np
import pytest
import torch

import shardflow

warnings.filterwarnings("ignore", message="Sparse invariant checks")

I = np.array([[0, 2, 1, 2, 0], [1, 0, 3, 0, 1]])
V = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)


def both(fn):
    return fn(shardflow), fn(torch)


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_construction_and_metadata_match_torch():
    s, t = both(lambda m: m.sparse_coo_tensor(m.tensor(I), m.tensor(V), (3, 4)))
    assert s.is_sparse and t.is_sparse and not shardflow.ones(2).is_sparse
    assert tuple(s.shape) == tuple(t.shape) and s._nnz() == t._nnz() == 5
    assert (s.sparse_dim(), s.dense_dim()) == (t.sparse_dim(), t.dense_dim())
    assert s.is_coalesced() == t.is_coalesced() is False
    assert repr(s.layout) == "shardflow.sparse_coo" and s.dtype is shardflow.float32
    assert shardflow.is_tensor(s) and s.ndim == 2 and s.size(1) == 4
    _same(s._indices().numpy(), t._indices().numpy())
    _same(s._values().numpy(), t._values().numpy())
    s2, t2 = both(lambda m: m.sparse_coo_tensor(I.tolist(), V.tolist()))  # inferred size
    assert tuple(s2.shape) == tuple(t2.shape) == (3, 4)
    s3, t3 = both(lambda m: m.sparse_coo_tensor(m.tensor(I), m.tensor(V), (3, 4), dtype=m.float64))
    assert str(s3.dtype).split(".")[-1] == str(t3.dtype).split(".")[-1] == "float64"


def test_coalesce_matches_torch():
    for values in (V, np.arange(15, dtype=np.float32).reshape(5, 3)):
        size = (3, 4) + values.shape[1:]
        s, t = both(lambda m: m.sparse_coo_tensor(m.tensor(I), m.tensor(values), size).coalesce())
        assert s.is_coalesced() and t.is_coalesced()
        _same(s.indices().numpy(), t.indices().numpy())
        _same(s.values().numpy(), t.values().numpy())
        _same(s.to_dense().numpy(), t.to_dense().numpy())


def test_uncoalesced_indices_and_values_raise_torchs_error():
    for name in ("indices", "values"):
        msgs = []
        for lib in (shardflow, torch):
            s = lib.sparse_coo_tensor(lib.tensor(I), lib.tensor(V), (3, 4))
            with pytest.raises(RuntimeError) as info:
                getattr(s, name)()
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


def test_to_sparse_matches_torch():
    a = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [-2.0, 0.0, 3.0]], dtype=np.float32)
    for sparse_dim in (None, 1):
        s, t = both(lambda m: m.tensor(a).to_sparse() if sparse_dim is None else m.tensor(a).to_sparse(sparse_dim))
        assert s.is_coalesced() == t.is_coalesced()
        _same(s.indices().numpy(), t.indices().numpy())
        _same(s.values().numpy(), t.values().numpy())
        assert tuple(s.shape) == tuple(t.shape)
    assert shardflow.tensor(a).to_sparse().to_sparse() is not None


def test_printing_matches_torch():
    def cases(m):
        yield m.sparse_coo_tensor(m.tensor(I), m.tensor(V), (3, 4))
        yield m.sparse_coo_tensor(m.tensor(I), m.tensor(V), (3, 4)).coalesce()
        yield m.sparse_coo_tensor(m.tensor(I), m.tensor(V), (3, 4), requires_grad=True)
        yield m.tensor([[0.0, 2.0], [1.0, 0.0]]).to_sparse()
        yield m.sparse_coo_tensor(m.zeros(2, 0, dtype=m.int64), m.zeros(0), (2, 3))

    for s, t in zip(cases(shardflow), cases(torch)):
        assert repr(s).replace("shardflow.", "torch.") == repr(t)


def test_sparse_leaf_gradient_is_sparse_like_torch():
    d = np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32)
    grads = []
    for lib in (shardflow, torch):
        s = lib.sparse_coo_tensor(lib.tensor(I), lib.tensor(V), (3, 4), requires_grad=True)
        assert s.requires_grad and s.is_leaf
        out = lib.sparse.mm(s, lib.tensor(d))
        (out * out).sum().backward()
        assert s.grad.is_sparse
        grads.append(s.grad.to_dense().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


def test_values_tensor_receives_gradient_through_sparse_coo_tensor():
    d = np.ones((4, 2), dtype=np.float32)
    grads = []
    for lib in (shardflow, torch):
        v = lib.tensor(V, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(I), v, (3, 4))
        assert s.requires_grad and s.grad_fn is not None
        lib.spmm(s, lib.tensor(d)).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_legacy_constructor_and_arithmetic():
    s = shardflow.sparse.FloatTensor(shardflow.tensor(I), shardflow.tensor(V.astype(np.float64)), (3, 4))
    t = torch.sparse.FloatTensor(torch.tensor(I), torch.tensor(V.astype(np.float64)), (3, 4))
    assert s.dtype is shardflow.float64 and t.dtype == torch.float64  # torch keeps the values' dtype
    for f in (lambda x: x * 2, lambda x: 3.0 * x, lambda x: x / 4, lambda x: -x, lambda x: x + x,
              lambda x: x - x * 0.5, lambda x: x.t()):
        np.testing.assert_allclose(f(s).to_dense().numpy(), f(t).to_dense().numpy())
    assert tuple(shardflow.sparse.FloatTensor(2, 3).shape) == (2, 3)
    assert shardflow.sparse.FloatTensor(2, 3)._nnz() == 0


def test_dense_times_sparse_matches_torch():
    d = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    outs = []
    for lib in (shardflow, torch):
        x = lib.tensor(d, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(I), lib.tensor(V), (3, 4))
        out = lib.mm(x, s) + x @ s + lib.matmul(x, s)
        (out * out).sum().backward()
        outs.append((out.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_conversions_pickle_and_detach():
    s = shardflow.sparse_coo_tensor(shardflow.tensor(I), shardflow.tensor(V), (3, 4), requires_grad=True)
    assert s.to(shardflow.float64).dtype is shardflow.float64 and s.double().is_sparse
    assert not s.detach().requires_grad and s.cpu().is_sparse
    r = pickle.loads(pickle.dumps(s))
    np.testing.assert_array_equal(r.to_dense().numpy(), s.detach().to_dense().numpy())


def test_errors():
    S = shardflow.sparse_coo_tensor(shardflow.tensor(I), shardflow.tensor(V), (3, 4))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1, size is 3 but found index 3"):
        shardflow.sparse_coo_tensor(shardflow.tensor(I), shardflow.tensor(V), (3, 3))
    with pytest.raises(RuntimeError, match="same nnz"):
        shardflow.sparse_coo_tensor(shardflow.tensor(I), shardflow.tensor(V[:4]), (3, 4))
    with pytest.raises(RuntimeError, match="sparse_dim x nnz"):
        shardflow.sparse_coo_tensor(shardflow.tensor([0, 1]), shardflow.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        shardflow.sparse.mm(S, shardflow.ones(3, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        shardflow.sparse.mm(S, shardflow.ones(4, 2, dtype=shardflow.float64))
    with pytest.raises(RuntimeError, match="does not support sparse tensors.*to_dense"):
        S.exp()
    with pytest.raises(RuntimeError, match="does not support sparse tensors"):
        shardflow.maximum(shardflow.ones(3, 4), S)
    with pytest.raises(RuntimeError, match="must match the size"):  # dense + sparse broadcasts
        shardflow.ones(3) + S
    with pytest.raises(TypeError, match="to_dense"):
        S.numpy()


def test_dense_plus_sparse_is_dense_and_sparse_plus_dense_refused_like_torch():
    d = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    outs = []
    for lib in (shardflow, torch):
        x = lib.tensor(d, requires_grad=True)
        vals = lib.tensor(V, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(I), vals, (3, 4))  # duplicated entries add up
        out = (x + s) * 2 - (x - s) * 3 + lib.eye(3, 4) + s
        assert out.layout == lib.strided and not out.is_sparse
        (out * out).sum().backward()
        outs.append((out.detach().numpy(), x.grad.numpy(), vals.grad.numpy()))
        with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
            s + x
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-5)
