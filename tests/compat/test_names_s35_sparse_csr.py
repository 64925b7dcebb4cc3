"""Sparse CSR/CSC tensors (shardflow/ops/sparse_compressed.py) against torch 2.13: constructors,
conversions, index getters, repr, products with gradients, errors, and a tiny GCN trained with
a normalised adjacency in CSR."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

warnings.filterwarnings("ignore", message="Sparse (CSR tensor support|invariant)", category=UserWarning)

CROW, COL, VALS = [0, 2, 3, 5], [0, 2, 1, 0, 2], [1.0, 2.0, 3.0, 4.0, 5.0]


def _both(fn):
    return fn(torch), fn(sf)


def _same(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(b.detach().numpy()), a.detach().numpy(), rtol=tol, atol=tol)


def _csr(m, requires_grad=False, **kw):
    v = m.tensor(VALS, requires_grad=requires_grad)
    return m.sparse_csr_tensor(m.tensor(CROW), m.tensor(COL), v, (3, 3), **kw), v


def test_csr_constructor_getters_layout_and_repr_match_torch():
    (t, _), (s, _) = _both(_csr)
    assert s.layout is sf.sparse_csr and t.layout is torch.sparse_csr
    assert (s.is_sparse, s.is_sparse_csr, s._nnz()) == (t.is_sparse, t.is_sparse_csr, t._nnz()) == (False, True, 5)
    assert tuple(s.shape) == tuple(t.shape) and s.dtype is sf.float32
    for name in ("crow_indices", "col_indices", "values"):
        assert getattr(s, name)().tolist() == getattr(t, name)().tolist()
    assert repr(s).replace("shardflow.", "torch.") == repr(t)
    t64, s64 = _both(lambda m: m.sparse_csr_tensor(m.tensor(CROW, dtype=m.int32), m.tensor(COL, dtype=m.int32),
                                                   m.tensor(VALS, dtype=m.float64)))
    assert repr(s64).replace("shardflow.", "torch.") == repr(t64)  # inferred size
    assert s64.crow_indices().dtype is sf.int32 and t64.crow_indices().dtype is torch.int32
    _same(t64.to_dense(), s64.to_dense())
    for name in ("crow_indices_copy", "col_indices_copy"):
        assert getattr(sf, name)(s).tolist() == getattr(torch, name)(t).tolist()
    tc, sc = t.to_sparse_csc(), s.to_sparse_csc()
    for name in ("ccol_indices_copy", "row_indices_copy"):
        assert getattr(sf, name)(sc).tolist() == getattr(torch, name)(tc).tolist()


def test_csc_and_conversions_between_layouts():
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], np.float32)
    for conv in ("to_sparse_csr", "to_sparse_csc"):
        t, s = _both(lambda m, conv=conv: getattr(m.tensor(a), conv)())
        assert repr(s).replace("shardflow.", "torch.") == repr(t)
        _same(t.to_dense(), s.to_dense())
    t, s = _both(lambda m: m.tensor(a).to_sparse_csr().to_sparse_csc())
    assert s.ccol_indices().tolist() == t.ccol_indices().tolist()
    assert s.row_indices().tolist() == t.row_indices().tolist() and s.values().tolist() == t.values().tolist()
    t, s = _both(lambda m: m.tensor(a).to_sparse().to_sparse_csr())  # COO -> CSR
    assert repr(s).replace("shardflow.", "torch.") == repr(t)
    t, s = _both(lambda m: m.tensor(a).to_sparse().to_sparse(layout=m.sparse_csc))
    assert repr(s).replace("shardflow.", "torch.") == repr(t)
    t, s = _both(lambda m: m.tensor(a).to_sparse_csc().to_sparse())  # CSC -> COO (row-major)
    assert repr(s).replace("shardflow.", "torch.") == repr(t)
    t, s = _both(lambda m: m.tensor(a).to_sparse(layout=m.sparse_csc).t())  # CSC^T is CSR
    assert s.layout is sf.sparse_csr and t.layout is torch.sparse_csr
    _same(t.to_dense(), s.to_dense())
    t, s = _both(lambda m: m.sparse_compressed_tensor(m.tensor(CROW), m.tensor(COL), m.tensor(VALS), (3, 3),
                                                      layout=m.sparse_csc))
    assert repr(s).replace("shardflow.", "torch.") == repr(t)
    t, s = _both(lambda m: (m.tensor(a).to_sparse_csr() * 2 + m.tensor(a).to_sparse_csr() * 0.25).to_dense())
    _same(t, s)
    t, s = _both(lambda m: m.ones(2, 3) + m.tensor(a).to_sparse_csr())  # dense result
    _same(t, s)


def test_products_and_gradients_to_values_and_dense_operand():
    rng = np.random.default_rng(0)
    dn = rng.standard_normal((3, 2)).astype(np.float32)
    bias = rng.standard_normal((3, 2)).astype(np.float32)
    res = {}
    for m in (torch, sf):
        s, v = _csr(m, requires_grad=True)
        d = m.tensor(dn, requires_grad=True)
        out = (m.sparse.mm(s, d) * 1.0 + m.mm(s, d) * 2.0 + (s @ d) * 3.0
               + m.sparse.addmm(m.tensor(bias), s, d, beta=0.5, alpha=2.0))
        vec = s @ m.tensor(dn[:, 0])  # matrix @ vector
        left = m.tensor(dn.T) @ s  # dense @ CSR
        ((out * out).sum() + vec.sum() + (left ** 2).sum()).backward()
        res[m] = (out, vec, left, v.grad, d.grad)
    for a, b in zip(res[torch], res[sf], strict=True):
        _same(a, b, 1e-5)
    # a leaf built with requires_grad=True gets a CSR gradient on its pattern
    grads = {}
    for m in (torch, sf):
        s, _ = _csr(m)
        leaf = m.sparse_csr_tensor(s.crow_indices(), s.col_indices(), s.values(), (3, 3), requires_grad=True)
        m.sparse.mm(leaf, m.tensor(dn)).pow(2).sum().backward()
        grads[m] = leaf.grad
    assert grads[sf].layout is sf.sparse_csr
    _same(grads[torch].values(), grads[sf].values(), 1e-5)
    # to_sparse_csr of a dense tensor keeps the graph to it (sparse.mm: torch masks the
    # gradient to the pattern, as shardflow does for every product)
    xs = {}
    for m in (torch, sf):
        x = m.tensor([[0.0, 1.0], [2.0, 0.0]], requires_grad=True)
        (m.sparse.mm(x.to_sparse_csr(), m.tensor(dn[:2])) ** 2).sum().backward()
        xs[m] = x.grad
    _same(xs[torch], xs[sf], 1e-5)


def _raises_like(fn, exc=RuntimeError, match=None):
    with pytest.raises(exc) as et:
        fn(torch)
    with pytest.raises(exc, match=match) as es:
        fn(sf)
    return str(et.value), str(es.value)


def test_errors_match_torch():
    crow, col, v = CROW, COL, VALS
    with torch.sparse.check_sparse_tensor_invariants():  # torch checks only when asked; shardflow always
        for args, size in [((crow, [0, 2, 1, 0, 3], v), (3, 3)), ((crow[:3], col, v), (3, 3)),
                           (([1, 2, 3, 5], col, v), (3, 3)), (([0, 2, 3, 4], col, v), (3, 3)),
                           ((crow, col, v[:4]), (3, 3))]:
            t, s = _raises_like(lambda m, a=args, z=size: m.sparse_csr_tensor(
                m.tensor(a[0]), m.tensor(a[1]), m.tensor(a[2]), z))
            assert s == t
    dense = lambda m: m.ones(2, 2)  # noqa: E731
    for fn in (lambda m: dense(m).crow_indices(), lambda m: dense(m).to_sparse_csc().crow_indices(),
               lambda m: dense(m).to_sparse_csr().row_indices(), lambda m: dense(m).to_sparse_csr().indices(),
               lambda m: dense(m).to_sparse_csr().coalesce(),
               lambda m: m.sparse_csr_tensor(m.tensor(CROW), m.tensor(COL), m.tensor(VALS), layout=m.sparse_csc),
               lambda m: m.sparse_compressed_tensor(m.tensor(CROW), m.tensor(COL), m.tensor(VALS))):
        t, s = _raises_like(fn)
        assert s == t
    t, s = _raises_like(lambda m: dense(m).to_sparse_csr().numpy(), TypeError)
    assert s == t
    # not built: blocked layouts, batched/hybrid compressed tensors (torch builds them)
    with pytest.raises(NotImplementedError, match="sparse_csr.*to_sparse"):
        dense(sf).to_sparse_bsr((1, 1))
    for name in ("sparse_bsr_tensor", "sparse_bsc_tensor"):
        with pytest.raises(NotImplementedError, match="sparse_csr"):
            getattr(sf, name)(sf.tensor(CROW), sf.tensor(COL), sf.ones(5, 1, 1))
    with pytest.raises(NotImplementedError, match="only 2-D"):
        sf.ones(2, 2, 2).to_sparse_csr()
    with pytest.raises(NotImplementedError, match="dense_dim"):
        sf.ones(2, 2).to_sparse_csr(dense_dim=1)
    with pytest.raises(RuntimeError, match="to_dense"):
        dense(sf).to_sparse_csr().exp()


def test_gcn_with_a_csr_adjacency_trains_like_torch():
    """Kipf & Welling's two-layer GCN, ``A_hat = D^-1/2 (A + I) D^-1/2`` in CSR, Adam."""
    rng = np.random.default_rng(1)
    n, f, h, c = 8, 5, 4, 3
    a = (rng.random((n, n)) < 0.3).astype(np.float32)
    a = np.maximum(a, a.T) + np.eye(n, dtype=np.float32)
    dinv = 1.0 / np.sqrt(a.sum(1))
    a_hat = (dinv[:, None] * a * dinv[None, :]).astype(np.float32)
    feats = rng.standard_normal((n, f)).astype(np.float32)
    labels = rng.integers(0, c, n)
    w1 = (rng.standard_normal((f, h)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((h, c)) * 0.3).astype(np.float32)
    runs = {}
    for m in (torch, sf):
        adj = m.tensor(a_hat).to_sparse_csr()
        x, y = m.tensor(feats), m.tensor(labels)
        p1, p2 = m.nn.Parameter(m.tensor(w1)), m.nn.Parameter(m.tensor(w2))
        opt = m.optim.Adam([p1, p2], lr=0.05)
        losses = []
        for _ in range(4):
            opt.zero_grad()
            hid = m.relu(m.sparse.mm(adj, x @ p1))
            logits = adj @ (hid @ p2)
            loss = m.nn.functional.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs[m] = (losses, p1, p2)
    np.testing.assert_allclose(runs[sf][0], runs[torch][0], rtol=1e-5)
    _same(runs[torch][1], runs[sf][1], 1e-5)
    _same(runs[torch][2], runs[sf][2], 1e-5)


def test_csr_and_csc_save_load_round_trip_with_torch(tmp_path):
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]], np.float32)
    path = tmp_path / "adj.pt"
    sf.save({"csr": sf.tensor(a).to_sparse_csr(), "csc": sf.tensor(a).to_sparse_csc()}, path)
    for got in (torch.load(path), sf.load(path)):
        assert str(got["csr"].layout).endswith("sparse_csr") and str(got["csc"].layout).endswith("sparse_csc")
        np.testing.assert_array_equal(got["csr"].to_dense().numpy(), a)
        np.testing.assert_array_equal(got["csc"].to_dense().numpy(), a)
    torch.save(torch.tensor(a).to_sparse_csr(), path)
    got = sf.load(path)
    assert got.layout is sf.sparse_csr and got.crow_indices().tolist() == [0, 1, 3]
