"""``shardflow.masked.MaskedTensor`` against ``torch.masked.MaskedTensor``: construction and its
errors, printing, reductions (data and result mask), elementwise ops, mask mismatch errors,
``to_tensor`` and gradients."""

import re
import warnings

import numpy as np
import pytest
import torch
from torch.masked import masked_tensor as t_masked_tensor

import shardflow as sf
from shardflow.masked import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor

warnings.filterwarnings("ignore", message=".*MaskedTensor.*")
warnings.filterwarnings("ignore", message=".*prototype.*")

D = np.array([[1.0, -2.0, 3.5], [4.0, 5.0, -6.0]], dtype=np.float32)
M = np.array([[True, False, True], [False, False, False]])


def _pair(data=D, mask=M, requires_grad=False):
    s = masked_tensor(sf.tensor(data), sf.tensor(mask), requires_grad=requires_grad)
    t = t_masked_tensor(torch.tensor(data), torch.tensor(mask), requires_grad=requires_grad)
    return s, t


def _same(s, t):
    assert is_masked_tensor(s)
    np.testing.assert_array_equal(s.get_mask().numpy(), t.get_mask().numpy())
    sm = s.get_mask().numpy()  # only the masked-in values are defined
    np.testing.assert_allclose(s.get_data().detach().numpy()[sm],
                               t.get_data().detach().numpy()[sm], rtol=1e-5, atol=1e-6)
    assert str(s.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


def test_construction_accessors_and_printing_match_torch():
    s, t = _pair()
    assert repr(s) == repr(t)
    assert repr(s.sum()) == repr(t.sum())
    assert repr(s.sum(1)) == repr(t.sum(1))
    si, ti = _pair(np.array([1, 2], np.int64), np.array([True, False]))
    assert repr(si) == repr(ti)
    assert repr(s > 0) == repr(t > 0)  # bool
    assert repr(s.amax(1)) == repr(t.amax(1))  # a fully masked-out element
    assert (s.shape, s.ndim, s.dim(), s.numel(), len(s)) == (
        tuple(t.shape), t.ndim, t.dim(), t.numel(), len(t))
    np.testing.assert_array_equal(s.get_data().numpy(), D)
    np.testing.assert_array_equal(s.to_tensor(0).numpy(), t.to_tensor(0).numpy())
    np.testing.assert_array_equal(s.to_tensor(float("nan")).numpy(),
                                  t.to_tensor(float("nan")).numpy())
    assert is_masked_tensor(s) and not is_masked_tensor(sf.tensor(D))
    assert isinstance(as_masked_tensor(sf.tensor(D), sf.tensor(M)), MaskedTensor)
    _same(s.double(), t.double())


def test_construction_errors_match_torch():
    for data, mask, exc in [
        ([1.0, 2.0], sf.tensor([True, False]), TypeError),
        (sf.tensor(D), sf.tensor(M).int(), TypeError),
        (sf.tensor(D), sf.tensor(M[0]), ValueError),
    ]:
        tdata = torch.tensor(data.numpy()) if isinstance(data, sf.Tensor) else data
        tmask = torch.tensor(mask.numpy())
        with pytest.raises(exc) as t_err:
            t_masked_tensor(tdata, tmask)
        with pytest.raises(exc, match=re.escape(str(t_err.value))):
            masked_tensor(data, mask)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "argmax", "argmin", "prod",
                                  "var", "std"])
def test_reductions_match_torch(name):
    s, t = _pair()
    _same(getattr(s, name)(), getattr(t, name)())
    _same(getattr(s, name)(1), getattr(t, name)(1))
    _same(getattr(s, name)(0, keepdim=True), getattr(t, name)(0, keepdim=True))


def test_all_matches_torch():
    data = np.array([[True, False, True], [False, True, False]])
    mask = np.array([[True, True, True], [False, False, True]])
    s, t = _pair(data, mask)
    for args, kw in [((), {}), ((1,), {}), ((0,), {"keepdim": True})]:
        assert repr(s.all(*args, **kw)) == repr(t.all(*args, **kw))


def test_softmax_and_masked_functions_on_a_masked_tensor():
    s, t = _pair()
    _same(s.softmax(1), t.softmax(1))
    # torch.masked.<fn>(mt) uses the MaskedTensor's own mask and returns a plain tensor
    np.testing.assert_allclose(sf.masked.sum(s, 1).numpy(), torch.masked.sum(t, 1).numpy())
    np.testing.assert_allclose(sf.masked.amax(s, 1).numpy(), torch.masked.amax(t, 1).numpy())


def test_elementwise_ops_match_torch():
    s, t = _pair()
    s2, t2 = _pair(D[::-1].copy() + 10)
    for op in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
               lambda a, b: a == b, lambda a, b: a < b, lambda a, b: a >= b,
               lambda a, b: a.maximum(b), lambda a, b: a.atan2(b)):
        _same(op(s, s2), op(t, t2))
    for op in (lambda a: a + 1.5, lambda a: 2 + a, lambda a: 3 * a, lambda a: 1 / a, lambda a: a ** 2,
               lambda a: -a, lambda a: abs(a), lambda a: a.exp(), lambda a: a.sin(),
               lambda a: a.abs().sqrt(), lambda a: a > 0, lambda a: a + a.get_data()):
        _same(op(s), op(t))
    with pytest.raises(TypeError, match="unsupported operand"):
        2 - t  # torch's MaskedTensor has no reflected subtraction
    with pytest.raises(TypeError, match="unsupported operand"):
        2 - s


def test_mismatched_masks_raise_torchs_error():
    s, t = _pair()
    s_other, t_other = _pair(mask=~M)
    with pytest.raises(ValueError) as t_err:
        t + t_other
    with pytest.raises(ValueError, match=re.escape(str(t_err.value))):
        s + s_other
    with pytest.raises(ValueError, match="Input masks must match"):
        s.mul(s_other)


def test_gradients_match_torch():
    s, t = _pair(requires_grad=True)
    assert s.requires_grad and t.requires_grad
    (s * s).sum().backward()
    (t * t).sum().backward()
    _same(s.grad, t.grad)
    s, t = _pair(requires_grad=True)
    s.exp().mean().backward()
    t.exp().mean().backward()
    _same(s.grad, t.grad)


def test_indexing_and_shape_methods_pass_through_like_torch():
    s, t = _pair(np.arange(6, dtype=np.float32).reshape(2, 3),
                 np.array([[True, False, True], [False, True, True]]))
    for op in (lambda a: a[0], lambda a: a[:, 1:], lambda a: a[0, 1], lambda a: a[[1, 0]],
               lambda a: a.transpose(0, 1), lambda a: a.t(), lambda a: a.view(3, 2),
               lambda a: a.reshape(-1), lambda a: a.expand(2, 2, 3), lambda a: a.unsqueeze(0),
               lambda a: a.flatten(), lambda a: a.select(0, 1), lambda a: a.narrow(1, 0, 2),
               lambda a: a.unfold(1, 2, 1)):
        r_s, r_t = op(s), op(t)
        assert repr(r_s) == repr(r_t)
        _same(r_s, r_t)
    for r_s, r_t in zip(s.split(1), t.split(1)):
        _same(r_s, r_t)
    _same(s[s.get_mask()], t[t.get_mask()])
