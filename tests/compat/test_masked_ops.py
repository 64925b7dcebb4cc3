"""``shardflow.masked``'s reductions against ``torch.masked``'s: values (fully masked-out slices
included: identity, NaN or -inf as torch gives), dtypes, broadcast masks, gradients and errors."""

import warnings

import numpy as np
import pytest
import torch

import shardflow as sf

warnings.filterwarnings("ignore", message=".*prototype.*")

_RNG = np.random.default_rng(0)
X = _RNG.permutation(24).reshape(2, 3, 4).astype(np.float32) / 7 - 1.5  # distinct values
MASK = _RNG.random((2, 3, 4)) > 0.4
MASK[1, 2, :] = False  # a fully masked-out row along dim 2
MASK[0, :, 1] = False  # and a fully masked-out column along dim 1
MASKS = {"full": MASK, "broadcast": MASK[0, :, :]}  # (3, 4) mask broadcast over dim 0

REDUCTIONS = ["sum", "mean", "amax", "amin", "prod", "logsumexp", "norm", "var", "std"]


def _both(name, x, mask, *args, **kw):
    sm = None if mask is None else sf.tensor(mask)
    tm = None if mask is None else torch.tensor(mask)
    sx = sf.tensor(x, requires_grad=x.dtype.kind == "f")
    tx = torch.tensor(x, requires_grad=x.dtype.kind == "f")
    s_kw = dict(kw)
    if "dtype" in kw:
        s_kw["dtype"] = getattr(sf, str(kw["dtype"]).split(".")[-1])
    s = getattr(sf.masked, name)(sx, *args, mask=sm, **s_kw)
    t = getattr(torch.masked, name)(tx, *args, mask=tm, **kw)
    return (sx, s), (tx, t)


def _same(s, t, atol=1e-5):
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (s.dtype, t.dtype)
    assert tuple(s.shape) == tuple(t.shape)
    np.testing.assert_allclose(s.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=atol)


def _grads_same(s_pair, t_pair):
    """grad of sum(finite outputs * w) matches torch's (NaN where torch gives NaN)."""
    (sx, s), (tx, t) = s_pair, t_pair
    w = np.linspace(0.5, 1.5, s.numel()).reshape(tuple(s.shape)).astype(np.float32)
    finite = np.isfinite(t.detach().numpy())
    (sf.where(sf.tensor(finite), s, 0.0) * sf.tensor(w)).sum().backward()
    (torch.where(torch.tensor(finite), t, 0.0) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask_kind", ["full", "broadcast"])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_match_torch(name, mask_kind):
    mask = MASKS[mask_kind]
    args = (2.0,) if name == "norm" else ()
    for dim, keepdim in [(2, False), ((0, 2), True), (None, False), (-2, False)]:
        s_pair, t_pair = _both(name, X, mask, *args, dim, keepdim=keepdim)
        _same(s_pair[1], t_pair[1])
    _grads_same(*_both(name, X, mask, *args, 2))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin_match_torch_including_their_float_result(name):
    for dim in (2, 1, None):
        (_, s), (_, t) = _both(name, X, MASK, dim, keepdim=dim == 1)
        _same(s, t)  # float32: torch casts the index to the input's dtype
    (_, s), (_, t) = _both(name, X, MASK, 2, dtype=torch.int64)
    assert s.dtype == sf.int64 and s.tolist() == t.tolist()


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "softmax", "log_softmax", "softmin"])
def test_normalizations_match_torch(name):
    for dim in (2, 0, -1):
        s_pair, t_pair = _both(name, X, MASK, dim)
        _same(s_pair[1], t_pair[1])
    _grads_same(*_both(name, X, MASK, 2))
    (_, s), (_, t) = _both(name, X, MASK, 1, dtype=torch.float64)
    _same(s, t)


def test_normalize_median_logaddexp_match_torch():
    for ord in (2.0, 1.0, float("inf")):
        s_pair, t_pair = _both("normalize", X, MASK, ord, 2)
        _same(s_pair[1], t_pair[1])
    _grads_same(*_both("normalize", X, MASK, 2.0, 2))
    (_, s), (_, t) = _both("median", X, MASK, 2)
    _same(s, t)  # NaN for the fully masked-out row
    (_, s), (_, t) = _both("median", X, MASK, 1, keepdim=True)
    _same(s, t)
    other = X[::-1].copy()
    m2 = ~MASK
    s = sf.masked.logaddexp(sf.tensor(X), sf.tensor(other), input_mask=sf.tensor(MASK),
                            other_mask=sf.tensor(m2))
    t = torch.masked.logaddexp(torch.tensor(X), torch.tensor(other), input_mask=torch.tensor(MASK),
                               other_mask=torch.tensor(m2))
    _same(s, t)


def test_integer_and_bool_inputs_follow_torchs_dtypes():
    xi = (X * 7).astype(np.int32)
    for name in ("sum", "prod", "amax", "amin"):
        (_, s), (_, t) = _both(name, xi, MASK, 2)
        assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert s.tolist() == t.tolist()  # amax/amin: the dtype's min/max where fully masked
    (_, s), (_, t) = _both("var", xi, MASK, 2)
    _same(s, t)
    (_, s), (_, t) = _both("sum", MASK, MASK[0], 1)
    assert s.dtype == sf.int64 and s.tolist() == t.tolist()


def test_var_std_correction_and_unbiased():
    for kw in ({"unbiased": False}, {"correction": 0}, {"correction": 2}):
        for name in ("var", "std"):
            (_, s), (_, t) = _both(name, X, MASK, 2, **kw)
            _same(s, t)


def test_without_mask_equals_the_plain_reduction():
    for name in REDUCTIONS:
        args = (2.0,) if name == "norm" else ()
        (_, s), (_, t) = _both(name, X, None, *args, 1)
        _same(s, t)


def test_errors_match_torch():
    x, m = sf.tensor(X), sf.tensor(MASK)
    with pytest.raises(ValueError, match="mean\\(\\): Could not infer output dtype"):
        sf.masked.mean(sf.tensor([1, 2]), mask=sf.tensor([True, False]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        sf.masked.sum(x, 3, mask=m)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        sf.masked.sum(x, (1, 1), mask=m)
    with pytest.raises(IndexError, match="mask dimensionality higher"):
        sf.masked.sum(x[0], 1, mask=m)
    with pytest.raises(ValueError, match="no fully masked out rows"):
        sf.masked.median(sf.tensor((X * 7).astype(np.int64)), 2, mask=m)
