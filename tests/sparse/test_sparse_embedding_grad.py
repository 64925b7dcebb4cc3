"""``Embedding(sparse=True)`` / ``EmbeddingBag(sparse=True)``: the weight's ``.grad`` is a
sparse COO tensor of the rows a batch used (shardflow/autograd/sparse_grad.py), and
``SparseAdam``, ``SGD`` and ``Adagrad`` step those rows (shardflow/optim/sparse_steps.py),
each checked against torch 2.13 (word2vec / DLRM-style training)."""

import numpy as np
import pytest
import torch

import shardflow as sf


def _same(s, t, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def _pair(V=7, D=3, **kw):
    torch.manual_seed(0)
    t = torch.nn.Embedding(V, D, sparse=True, **kw)
    s = sf.nn.Embedding(V, D, sparse=True, **kw)
    with sf.no_grad():
        s.weight.copy_(sf.tensor(t.weight.detach().numpy()))
    return s, t


def test_scale_grad_by_freq_with_sparse_refused_at_backward_like_torch():
    for lib, m in zip((sf, torch), _pair(scale_grad_by_freq=True)):
        y = m(lib.tensor([1, 1]))  # the forward (inference) works
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
            y.sum().backward()


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}])
def test_sparse_grad_is_torchs_uncoalesced_rows(kw):
    s, t = _pair(**kw)
    ids = [[1, 2, 5], [2, 2, 0]]
    rng = np.random.default_rng(0)
    up = rng.standard_normal((2, 3, 3)).astype(np.float32)
    (s(sf.tensor(ids)) * sf.tensor(up)).sum().backward()
    (t(torch.tensor(ids)) * torch.tensor(up)).sum().backward()
    gs, gt = s.weight.grad, t.weight.grad
    assert gs.is_sparse and gt.is_sparse and str(gs.layout) == "shardflow.sparse_coo"
    assert not gs.is_coalesced() and gs._nnz() == gt._nnz()
    assert gs._indices().tolist() == gt._indices().tolist()  # the ids' order, padding rows left out
    _same(gs._values(), gt._values())
    _same(gs.to_dense(), gt.to_dense())
    _same(gs.coalesce().values(), gt.coalesce().values())


def test_sparse_grads_accumulate_like_torch():
    s, t = _pair()
    for lib, m in ((sf, s), (torch, t)):
        m(lib.tensor([1, 3])).sum().backward()
        m(lib.tensor([2])).sum().backward()  # sparse + sparse: concatenated, still sparse
    assert s.weight.grad._indices().tolist() == t.weight.grad._indices().tolist() == [[1, 3, 2]]
    for lib, m in ((sf, s), (torch, t)):
        m.zero_grad(set_to_none=False)  # sparse zero_(): no rows left
        assert m.weight.grad.is_sparse and m.weight.grad._nnz() == 0
        m.weight.grad = lib.zeros(7, 3)  # a dense .grad takes the rows in place
        m(lib.tensor([2, 2])).sum().backward()
        assert not m.weight.grad.is_sparse
    _same(s.weight.grad, t.weight.grad)


def test_autograd_grad_and_hooks_see_the_sparse_gradient():
    s, t = _pair()
    seen = {}
    for lib, m in ((sf, s), (torch, t)):
        (g,) = lib.autograd.grad(m(lib.tensor([1, 1, 0])).sum(), m.weight)
        assert g.is_sparse and g._nnz() == 3
        h = m.weight.register_hook(lambda grad, lib=lib: seen.setdefault(lib.__name__, grad.is_sparse) and grad * 2)
        m(lib.tensor([4])).sum().backward()
        h.remove()
    assert seen == {"torch": True, "shardflow": True}
    _same(s.weight.grad.to_dense(), t.weight.grad.to_dense())


def _train(lib, m, make_opt, steps=3):
    opt = make_opt(lib, m)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        ids = rng.integers(0, 7, (4, 2))
        opt.zero_grad()
        m(lib.tensor(ids)).pow(2).sum().backward()
        opt.step()
    return opt


@pytest.mark.parametrize("make_opt", [
    lambda lib, m: lib.optim.SparseAdam(m.parameters(), lr=0.1),
    lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1),
    lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, dampening=0.1, maximize=True),
    lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True),
    lambda lib, m: lib.optim.Adagrad(m.parameters(), lr=0.5, lr_decay=0.01),
], ids=["SparseAdam", "SGD", "SGD-momentum-maximize", "SGD-nesterov", "Adagrad"])
def test_optimizers_step_the_rows_like_torch(make_opt):
    s, t = _pair()
    _train(sf, s, make_opt)
    _train(torch, t, make_opt)
    _same(s.weight, t.weight, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make_opt, match", [
    (lambda lib, m: lib.optim.Adam(m.parameters()), "Adam does not support sparse gradients, please consider SparseAdam"),
    (lambda lib, m: lib.optim.RMSprop(m.parameters()), "RMSprop does not support sparse gradients"),
    (lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.1, weight_decay=0.1), r"add\(sparse, dense\) is not supported"),
    (lambda lib, m: lib.optim.Adagrad(m.parameters(), weight_decay=0.1), "weight_decay option is not compatible"),
])
def test_optimizers_without_a_sparse_step_refuse_like_torch_before_any_change(make_opt, match):
    for lib, m in zip((sf, torch), _pair()):
        opt = make_opt(lib, m)
        before = m.weight.detach().clone()
        m(lib.tensor([1, 2])).sum().backward()
        with pytest.raises(RuntimeError, match=match):
            opt.step()
        assert lib.equal(m.weight.detach(), before)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_sparse_grad_like_torch(mode):
    torch.manual_seed(0)
    t = torch.nn.EmbeddingBag(6, 2, mode=mode, sparse=True)
    s = sf.nn.EmbeddingBag(6, 2, mode=mode, sparse=True)
    with sf.no_grad():
        s.weight.copy_(sf.tensor(t.weight.detach().numpy()))
    ids, offsets = [1, 4, 4, 0, 5], [0, 2]
    for lib, m in ((sf, s), (torch, t)):
        m(lib.tensor(ids), lib.tensor(offsets)).pow(2).sum().backward()
        lib.optim.SparseAdam(m.parameters(), lr=0.1).step()
    assert s.weight.grad.is_sparse and s.weight.grad._indices().tolist() == t.weight.grad._indices().tolist()
    _same(s.weight.grad._values(), t.weight.grad._values())
    _same(s.weight, t.weight, rtol=1e-5, atol=1e-6)
    for lib in (sf, torch):
        with pytest.raises(ValueError, match="max mode does not support sparse weights"):
            lib.nn.functional.embedding_bag(lib.tensor(ids), lib.ones(6, 2, requires_grad=True), lib.tensor(offsets),
                                            mode="max", sparse=True)


def test_weight_with_post_accumulate_hook_or_not_a_leaf_gets_a_dense_gradient():
    """Where the engine does not deliver the weight's gradient itself (a post-accumulate
    hook, as DDP/FSDP install; a weight computed from a leaf) the gradient stays dense:
    same numbers as torch's sparse one."""
    s, t = _pair()
    s.weight.register_post_accumulate_grad_hook(lambda p: None)
    s(sf.tensor([1, 1, 3])).sum().backward()
    t(torch.tensor([1, 1, 3])).sum().backward()
    assert not s.weight.grad.is_sparse
    _same(s.weight.grad, t.weight.grad.to_dense())
    w = sf.ones(4, 2, requires_grad=True)
    sf.nn.functional.embedding(sf.tensor([0, 0]), w * 2, sparse=True).sum().backward()
    assert not w.grad.is_sparse and w.grad[0].tolist() == [4.0, 4.0]


def test_compile_step_runs_a_sparse_embedding_eagerly():
    s, _ = _pair()
    opt = sf.optim.SparseAdam(s.parameters(), lr=0.1)
    step = sf.jit.compile_step(s, opt, lambda m, x: m(x).pow(2).sum())
    ref, _ = _pair()
    ref_opt = sf.optim.SparseAdam(ref.parameters(), lr=0.1)
    for _ in range(2):
        step(sf.tensor([1, 2]))
        ref_opt.zero_grad()
        ref(sf.tensor([1, 2])).pow(2).sum().backward()
        ref_opt.step()
    assert "sparse=True is not compiled" in step.explain()
    _same(s.weight, ref.weight)
