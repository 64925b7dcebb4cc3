"""Small bugs found by running public PyTorch examples with ``import shardflow as torch``:
NumPy operands, Scalar arguments given as 0-dim tensors, ``range`` indices and the
replacement sampler's memory. Each is checked against torch 2.13."""

import itertools

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.data import RandomSampler

# torch computes tensor-with-ndarray through NumPy, which warns about its __array_wrap__
pytestmark = pytest.mark.filterwarnings("ignore:__array_wrap__:DeprecationWarning")


def _same(a, b):
    """shardflow result ``a`` equals torch result ``b`` in dtype, shape and values."""
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())


# ---------------------------------------------------------------- tensor (op) ndarray
_X = np.array([1.5, -2.0, 3.0], dtype=np.float32)
_NDARRAYS = {
    "float64": np.array([2.0, 0.5, -1.0]),
    "float32": np.array([2.0, 0.5, -1.0], dtype=np.float32),
    "int32": np.array([2, 3, -1], dtype=np.int32),
    "0-dim float64": np.array(2.5),
    "2-d float64 (broadcast)": np.arange(1.0, 7.0).reshape(2, 3),
}


@pytest.mark.parametrize("name", list(_NDARRAYS))
@pytest.mark.parametrize("op", ["mul", "add", "sub", "truediv"])
def test_tensor_op_ndarray_matches_torch(name, op):
    nd = _NDARRAYS[name]
    f = getattr(__import__("operator"), op)
    _same(f(sf.tensor(_X), nd), f(torch.tensor(_X), nd))


@pytest.mark.parametrize("name", list(_NDARRAYS))
def test_ndarray_on_the_left_gives_the_commuted_result(name):
    # torch 2.13 with NumPy 2 raises TypeError for ``ndarray * tensor`` but computes
    # ``tensor * ndarray``; shardflow makes both work and equal (documented in COMPAT.md).
    nd = _NDARRAYS[name]
    _same(nd * sf.tensor(_X), torch.tensor(_X) * nd)
    _same(nd - sf.tensor(_X), -(torch.tensor(_X) - nd))
    _same(nd / sf.tensor(_X), nd / torch.tensor(_X))  # torch computes this one


def test_int_tensor_times_float_ndarray_and_numpy_scalars_match_torch():
    i = [1, 2, 3]
    _same(sf.tensor(i) * np.array([1.5, 2, 3]), torch.tensor(i) * np.array([1.5, 2, 3]))
    for s in (np.float64(2.5), np.float32(2.5), np.int64(3)):
        _same(sf.tensor(_X) * s, torch.tensor(_X) * s)
        _same(s * sf.tensor(_X), s * torch.tensor(_X))
        _same(sf.tensor(i) * s, torch.tensor(i) * s)


def test_tensor_times_ndarray_keeps_the_graph():
    # torch refuses (numpy() of a tensor that requires grad); shardflow differentiates it.
    x = sf.tensor(_X, requires_grad=True)
    nd = _NDARRAYS["float32"]
    (x * nd + nd * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * nd)


# ---------------------------------------------------------------- Scalar args as 0-dim tensors
def test_add_and_sub_accept_a_0dim_tensor_alpha():
    for alpha in (sf.tensor(2.0), np.float64(2.0)):
        t = sf.ones(3)
        out = t.add_(sf.tensor([1.0, 2.0, 3.0]), alpha=alpha)
        assert out is t
        ref = torch.ones(3).add_(torch.tensor([1.0, 2.0, 3.0]), alpha=torch.tensor(2.0))
        _same(t, ref)
    _same(sf.sub(sf.ones(3), sf.ones(3), alpha=sf.tensor(3.0)),
          torch.sub(torch.ones(3), torch.ones(3), alpha=torch.tensor(3.0)))
    _same(sf.add(2.0, sf.ones(3), alpha=sf.tensor(3.0)),
          torch.add(2.0, torch.ones(3), alpha=torch.tensor(3.0)))


def test_alpha_gradient_with_0dim_tensor_alpha():
    x = sf.ones(3, requires_grad=True)
    sf.zeros(3).add(x, alpha=sf.tensor(-0.5)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.5] * 3)


@pytest.mark.parametrize("bad", ["1-d", "requires_grad"])
def test_alpha_tensor_that_torch_refuses_raises_typeerror(bad):
    def make(lib):
        return lib.tensor([2.0]) if bad == "1-d" else lib.tensor(2.0, requires_grad=True)

    with pytest.raises(TypeError):
        torch.ones(3).add(torch.ones(3), alpha=make(torch))
    with pytest.raises(TypeError, match="alpha.*must be Number"):
        sf.ones(3).add(sf.ones(3), alpha=make(sf))


# ---------------------------------------------------------------- range as an index
@pytest.mark.parametrize("index", [
    range(1, 3), (range(2), 1), (slice(None), range(0, 4, 2)), range(2, -1, -1), range(0),
], ids=str)
def test_range_index_matches_torch(index):
    a = np.arange(12.0).reshape(3, 4)
    xs, xt = sf.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ys, yt = xs[index], xt[index]
    _same(ys, yt)
    (ys * 2).sum().backward()
    (yt * 2).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy())


def test_range_index_assignment_matches_torch():
    s, t = sf.arange(12).reshape(3, 4), torch.arange(12).reshape(3, 4)
    s[range(0, 3, 2)] = 7
    t[range(0, 3, 2)] = 7
    _same(s, t)


# ---------------------------------------------------------------- RandomSampler(replacement=True)
def test_replacement_sampler_with_huge_num_samples_is_lazy():
    # One big draw of 10**12 indices needs 8 TB; the sampler must yield the first ones at once.
    s = RandomSampler(range(10), replacement=True, num_samples=10**12,
                      generator=sf.Generator().manual_seed(0))
    assert len(s) == 10**12
    head = list(itertools.islice(iter(s), 10_000))
    assert len(head) == 10_000 and set(head) <= set(range(10))
    # uniform: each index within 5 standard errors (sqrt(0.1 * 0.9 / 10000) = 0.003) of 0.1
    freq = np.bincount(head, minlength=10) / len(head)
    assert np.all(np.abs(freq - 0.1) <= 5 * np.sqrt(0.1 * 0.9 / len(head))), freq


def test_replacement_sampler_stream_is_unchanged_by_chunking():
    # torch's draws (randint 32 at a time, session 30), also across chunks and for a last
    # partial chunk
    import torch

    n, k = 37, 10_001
    got = list(RandomSampler(range(n), replacement=True, num_samples=k,
                             generator=sf.Generator().manual_seed(5)))
    ref = list(torch.utils.data.RandomSampler(range(n), replacement=True, num_samples=k,
                                              generator=torch.Generator().manual_seed(5)))
    assert got == ref
    # torch semantics: exactly num_samples draws, uniform over the dataset
    counts = np.bincount(got, minlength=n)
    assert counts.sum() == k and counts.min() > 0.5 * k / n


@pytest.mark.parametrize("dst, call", [
    ("int64", lambda t: t.add_(0.5)),
    ("int64", lambda t: t.mul_(1.5)),
    ("bool", lambda t: t.add_(1)),
])
def test_inplace_result_that_cannot_be_cast_raises_as_in_torch(dst, call):
    ref = torch.zeros(3, dtype=getattr(torch, dst))
    with pytest.raises(RuntimeError, match="can't be cast"):
        call(ref)
    t = sf.zeros(3, dtype=getattr(sf, dst))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        call(t)
    assert t.dtype == getattr(sf, dst) and not t.numpy().any()  # untouched


def test_inplace_result_that_can_be_cast_still_works():
    t = sf.arange(3)
    t.add_(2)
    f = sf.ones(2)
    f.add_(sf.arange(2))
    assert t.tolist() == [2, 3, 4] and f.tolist() == [1.0, 2.0]
