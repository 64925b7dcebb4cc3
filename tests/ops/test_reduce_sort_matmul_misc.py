"""Reductions, sorting and matrix products: what the spec table cannot express — ties,
zeros, error messages, return types, multinomial statistics."""

import math

import numpy as np
import pytest
import torch

import shardflow as sf


def _pair(values, requires_grad=True, dtype=np.float64):
    v = np.asarray(values, dtype=dtype)
    return sf.tensor(v, requires_grad=requires_grad), torch.tensor(v, requires_grad=requires_grad)


def _grad_match(sf_fn, th_fn, values, **kw):
    s, t = _pair(values)
    sf_fn(s).sum().backward()
    th_fn(t).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-12, **kw)


# --------------------------------------------------------------------------- ties and zeros
TIES = [[1.0, 3.0, 3.0, -2.0], [5.0, 5.0, 5.0, 0.0], [-1.0, -4.0, -4.0, -1.0]]


@pytest.mark.parametrize(
    "name",
    ["amax_dim", "amin_dim", "amax_all", "max_all", "min_all", "norm_inf", "median_all"],
)
def test_tie_gradients_split_evenly_like_torch(name):
    fns = {
        "amax_dim": lambda m, x: m.amax(x, 1),
        "amin_dim": lambda m, x: m.amin(x, 1),
        "amax_all": lambda m, x: m.amax(x),
        "max_all": lambda m, x: m.max(x),
        "min_all": lambda m, x: m.min(x),
        "norm_inf": lambda m, x: m.norm(x, p=math.inf, dim=1),
        "median_all": lambda m, x: m.median(x),
    }
    f = fns[name]
    _grad_match(lambda x: f(sf, x), lambda x: f(torch, x), TIES)


def test_max_dim_with_ties_sends_grad_to_returned_index():
    s, t = _pair(TIES)
    vs, is_ = sf.max(s, 1)
    vt, it = torch.max(t, 1)
    np.testing.assert_array_equal(is_.numpy(), it.numpy())  # first occurrence, like torch
    vs.sum().backward()
    vt.sum().backward()
    np.testing.assert_array_equal(s.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize(
    "values",
    [[[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]], [[0.0, 0.0, 3.0], [0.0, 2.0, 4.0]], [[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]],
)
def test_prod_gradient_with_zeros(values):
    _grad_match(lambda x: sf.prod(x, 1), lambda x: torch.prod(x, 1), values)
    _grad_match(lambda x: sf.prod(x), lambda x: torch.prod(x), values)
    _grad_match(lambda x: sf.prod(x, 0, keepdim=True), lambda x: torch.prod(x, 0, keepdim=True), values)


@pytest.mark.parametrize(
    "values",
    [[[2.0, 0.0, 3.0, 1.5], [1.0, 2.0, 4.0, 0.0]], [[0.0, 0.0, 3.0, 2.0], [0.5, 2.0, 0.0, 4.0]]],
)
def test_cumprod_gradient_with_zeros(values):
    for dim in (0, 1):
        s, t = _pair(values)
        w = np.random.default_rng(dim).standard_normal(np.shape(values))
        (sf.cumprod(s, dim) * sf.tensor(w)).sum().backward()
        (torch.cumprod(t, dim) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_norm_of_zero_vector_has_zero_grad():
    _grad_match(lambda x: sf.norm(x, dim=1), lambda x: torch.norm(x, dim=1), [[0.0, 0.0], [3.0, 4.0]])


def test_logsumexp_is_stable_and_handles_neg_inf():
    x = np.array([[1000.0, 1000.0], [-np.inf, 0.0], [-np.inf, -np.inf]])
    s, t = _pair(x)
    np.testing.assert_allclose(sf.logsumexp(s, 1).numpy(), torch.logsumexp(t, 1).detach().numpy())
    s2, t2 = _pair(x[:2])
    sf.logsumexp(s2, 1).sum().backward()
    torch.logsumexp(t2, 1).sum().backward()
    np.testing.assert_allclose(s2.grad.numpy(), t2.grad.numpy())


def test_sort_descending_is_stable_and_puts_nan_first():
    v = np.array([1.0, np.nan, 3.0, 1.0, 3.0, -2.0], dtype=np.float32)
    s = sf.sort(sf.tensor(v), descending=True, stable=True)
    t = torch.sort(torch.tensor(v), descending=True, stable=True)
    np.testing.assert_array_equal(s.indices.numpy(), t.indices.numpy())
    np.testing.assert_array_equal(s.values.numpy(), t.values.numpy())


def test_topk_gradient_goes_to_selected_positions():
    v = np.random.default_rng(0).permutation(40).reshape(2, 20).astype(np.float64)
    s, t = _pair(v)
    (sf.topk(s, 3, dim=1).values * sf.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    (torch.topk(t, 3, dim=1).values * torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(s.grad.numpy(), t.grad.numpy())


# --------------------------------------------------------------------------- return types
def test_max_returns_named_tuple_that_unpacks():
    x = sf.tensor([[1.0, 5.0], [7.0, 2.0]])
    r = x.max(dim=1)
    values, indices = r
    assert isinstance(r, tuple) and len(r) == 2
    assert r.values is values and r.indices is indices and r[0] is values
    assert indices.dtype == sf.int64
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    assert "values=" in repr(r) and "indices=" in repr(r)
    s = sf.sort(x, 1)
    assert s.values is s[0]
    mn, mx = sf.aminmax(x)
    assert mn.item() == 1.0 and mx.item() == 7.0


def test_var_std_correction_and_degenerate_sizes():
    v = np.random.default_rng(1).standard_normal((4, 5))
    s, t = _pair(v, requires_grad=False)
    for kw in ({}, {"correction": 0}, {"correction": 2}, {"unbiased": False}):
        np.testing.assert_allclose(sf.var(s, 1, **kw).numpy(), torch.var(t, 1, **kw).numpy())
        np.testing.assert_allclose(sf.std(s, **kw).numpy(), torch.std(t, **kw).numpy())
    with pytest.raises(RuntimeError, match="either correction or unbiased"):
        sf.var(s, 1, unbiased=True, correction=1)
    one = sf.tensor([2.0])
    with pytest.warns(UserWarning, match="degrees of freedom"):  # torch warns, gives nan
        ref = torch.var(torch.tensor([2.0])).item()
    assert math.isnan(sf.var(one).item()) and math.isnan(ref)
    with pytest.raises(RuntimeError, match="floating point"):
        sf.var(sf.tensor([1, 2, 3]))


def test_integer_reductions_and_dtypes():
    a = np.array([[1, -2, 3], [0, 5, -1]], dtype=np.int32)
    s, t = sf.tensor(a), torch.tensor(a)
    for f in (lambda m, x: m.sum(x, 1), lambda m, x: m.prod(x), lambda m, x: m.cumsum(x, 1),
              lambda m, x: m.amax(x, 0), lambda m, x: m.count_nonzero(x)):
        rs, rt = f(sf, s), f(torch, t)
        np.testing.assert_array_equal(rs.numpy(), rt.numpy())
        assert str(rs.dtype).split(".")[-1] == str(rt.dtype).split(".")[-1]
    with pytest.raises(RuntimeError, match="mean"):
        sf.mean(s)
    with pytest.raises(RuntimeError, match="floating point"):
        sf.norm(s)


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "fn, shapes, pattern",
    [
        (sf.matmul, [(3, 4), (5, 6)], r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 5x6\)"),
        (sf.matmul, [(2, 3, 4), (5, 6)], r"shapes cannot be multiplied \(6x4 and 5x6\)"),
        (sf.matmul, [(3,), (4,)], r"inconsistent tensor size.*3 and 4"),
        (sf.matmul, [(3, 4), (5,)], r"size mismatch, got input \(3\), mat \(3x4\), vec \(5\)"),
        (sf.matmul, [(5,), (3, 4)], r"shapes cannot be multiplied \(1x5 and 3x4\)"),
        (sf.matmul, [(2, 3, 4), (3, 4, 5)], r"size of tensor a \(2\) must match the size of tensor b \(3\)"),
        (sf.matmul, [(), (3, 4)], r"at least 1D, but they are 0D and 2D"),
        (sf.mm, [(3, 4), (4,)], r"mat2 must be a matrix"),
        (sf.mm, [(3, 4), (5, 2)], r"shapes cannot be multiplied \(3x4 and 5x2\)"),
        (sf.bmm, [(2, 3, 4), (3, 4, 5)], r"batch2 tensor to be: \[2, 4\] but got: \[3, 4\]"),
        (sf.bmm, [(3, 4), (2, 4, 5)], r"batch1 must be a 3D tensor"),
        (sf.mv, [(3, 4), (5,)], r"size mismatch"),
        (sf.dot, [(3, 1), (3,)], r"1D tensors expected"),
        (sf.outer, [(3, 1), (3,)], r"Expected 1-D argument self"),
        (sf.linear, [(2, 3, 4), (5, 6)], r"shapes cannot be multiplied \(6x4 and 6x5\)"),
    ],
)
def test_shape_errors_name_both_shapes(fn, shapes, pattern):
    args = [sf.tensor(np.zeros(s, np.float32)) for s in shapes]
    with pytest.raises(RuntimeError, match=pattern):
        fn(*args)
    # the same call fails in torch too (the check is not stricter than torch's)
    tfn = torch.nn.functional.linear if fn is sf.linear else getattr(torch, fn.__name__)
    with pytest.raises(RuntimeError):
        tfn(*[torch.zeros(s) for s in shapes])


def test_matmul_dtype_mismatch_raises():
    a = sf.tensor(np.zeros((2, 3), np.float32))
    b = sf.tensor(np.zeros((3, 2), np.float64))
    with pytest.raises(RuntimeError, match="same dtype.*float32 != .*float64"):
        sf.matmul(a, b)


def test_einsum_errors():
    a = sf.tensor(np.zeros((3, 4), np.float32))
    b = sf.tensor(np.zeros((5, 6), np.float32))
    with pytest.raises(RuntimeError, match="subscript j has size 5 for operand 1"):
        sf.einsum("ij,jk->ik", a, b)
    with pytest.raises(RuntimeError, match="2 operand subscripts"):
        sf.einsum("ij,jk->ik", a)
    with pytest.raises(RuntimeError, match="does not match the number of dimensions"):
        sf.einsum("ijk->i", a)
    with pytest.raises(RuntimeError, match="output subscript z"):
        sf.einsum("ij->z", a)


def test_selection_errors():
    x = sf.tensor(np.zeros((3, 4), np.float32))
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        sf.topk(x, 5)
    with pytest.raises(RuntimeError, match="out of range"):
        sf.kthvalue(x, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        sf.sort(x, 2)


# --------------------------------------------------------------------------- linear fast path
def test_linear_matches_torch_on_noncontiguous_input_and_grad():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2,)).astype(np.float32)
    xs = sf.tensor(x, requires_grad=True)
    ws, bs = sf.tensor(w, requires_grad=True), sf.tensor(b, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    wt, bt = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    ys = sf.linear(sf.Tensor(xs.array.transpose(0, 2, 1)), ws, bs)  # (4, 5, 3) strided input
    yt = torch.nn.functional.linear(xt.transpose(1, 2).detach(), wt, bt)
    np.testing.assert_allclose(ys.numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    # the same strided input reached through the differentiable transpose: gradients too
    ys2 = sf.linear(xs.transpose(1, 2), ws, bs)
    gy = rng.standard_normal(ys2.shape).astype(np.float32)
    (ys2 * sf.tensor(gy)).sum().backward()
    (torch.nn.functional.linear(xt.transpose(1, 2), wt, bt) * torch.tensor(gy)).sum().backward()
    for s, t in ((xs, xt), (ws, wt), (bs, bt)):
        assert s.grad is not None
        np.testing.assert_allclose(s.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------- multinomial
def test_multinomial_with_replacement_frequencies():
    p = np.array([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]], dtype=np.float32)
    n = 20000
    g = sf.Generator().manual_seed(0)
    s = sf.multinomial(sf.tensor(p * 3.0), n, replacement=True, generator=g)  # unnormalised ok
    assert s.shape == (2, n) and s.dtype == sf.int64
    for r in range(2):
        freq = np.bincount(s.numpy()[r], minlength=4) / n
        sd = np.sqrt(p[r] * (1 - p[r]) / n)
        assert np.all(np.abs(freq - p[r]) <= 5 * sd + 1e-12), (freq, p[r])
    assert not np.any(s.numpy()[0] == 1)  # zero weight never drawn


def test_multinomial_without_replacement():
    p = np.array([0.5, 0.2, 0.0, 0.2, 0.1], dtype=np.float32)
    g = sf.Generator().manual_seed(1)
    trials = 4000
    w = sf.tensor(np.tile(p, (trials, 1)))
    s = sf.multinomial(w, 3, generator=g).numpy()
    assert s.shape == (trials, 3)
    assert all(len(set(row)) == 3 for row in s)  # no repeats in a row
    assert not np.any(s == 2)  # zero-weight category never drawn while others remain
    first = np.bincount(s[:, 0], minlength=5) / trials  # first draw ~ p
    assert np.all(np.abs(first - p) <= 5 * np.sqrt(p * (1 - p) / trials) + 1e-12)
    # second draw: P(j second) = sum_i p_i p_j / (1 - p_i)
    exp2 = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(5) if i != j) for j in range(5)])
    second = np.bincount(s[:, 1], minlength=5) / trials
    assert np.all(np.abs(second - exp2) <= 5 * np.sqrt(exp2 * (1 - exp2) / trials) + 1e-12)
    full = sf.multinomial(sf.tensor(p), 5).numpy()  # all categories: a permutation
    assert sorted(full.tolist()) == [0, 1, 2, 3, 4] and full[-1] == 2


def test_multinomial_generator_reproducible_and_errors():
    w = sf.tensor([1.0, 2.0, 3.0])
    a = sf.multinomial(w, 10, True, generator=sf.Generator().manual_seed(7)).numpy()
    b = sf.multinomial(w, 10, True, generator=sf.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(a, b)
    assert a.shape == (10,)
    with pytest.raises(RuntimeError, match="without replacement"):
        sf.multinomial(w, 4)
    with pytest.raises(RuntimeError, match="sum of probabilities <= 0"):
        sf.multinomial(sf.tensor([0.0, 0.0]), 1)
    with pytest.raises(RuntimeError, match="element < 0"):
        sf.multinomial(sf.tensor([-1.0, 1.0]), 1)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        sf.multinomial(sf.tensor(np.ones((2, 2, 2), np.float32)), 1)
