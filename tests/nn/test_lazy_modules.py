"""Lazy modules against torch 2.13: placeholders (``UninitializedParameter`` /
``UninitializedBuffer``), state_dict keys before and after the first call, the class each
becomes, initialisation ranges, and forward/backward once given torch's weights (loaded into
a fresh lazy module, which materialises it)."""

import copy
import math

import numpy as np
import pytest
import torch

import shardflow as sf

CASES = [  # (class name, args, kwargs, input shape)
    ("LazyLinear", (3,), {}, (2, 5)),
    ("LazyLinear", (3,), {"bias": False}, (2, 4, 5)),
    ("LazyConv1d", (4, 3), {"stride": 2}, (2, 3, 9)),
    ("LazyConv2d", (4, 3), {"padding": 1, "groups": 2}, (2, 6, 5, 5)),
    ("LazyConv2d", (4, 3), {"bias": False}, (3, 5, 5)),  # unbatched
    ("LazyConv3d", (2, 2), {}, (1, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2, "output_padding": 1}, (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2}, (2, 4, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm1d", (), {"affine": False}, (4, 3, 5)),
    ("LazyBatchNorm2d", (), {"momentum": None}, (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), {"track_running_stats": False}, (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6)),
    ("LazyInstanceNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {}, (1, 2, 3, 3, 3)),
]


def _ids(case):
    return f"{case[0]}-{case[2]}-{len(case[3])}d"


@pytest.mark.parametrize("name, args, kwargs, shape", CASES, ids=[_ids(c) for c in CASES])
def test_lazy_module_matches_torch(name, args, kwargs, shape):
    tm, sm = getattr(torch.nn, name)(*args, **kwargs), getattr(sf.nn, name)(*args, **kwargs)
    assert list(sm.state_dict()) == list(tm.state_dict())
    assert sm.has_uninitialized_params() == tm.has_uninitialized_params()
    for (n, tp), (m, sp) in zip(tm.named_parameters(), sm.named_parameters(), strict=True):
        assert n == m and type(sp).__name__ == type(tp).__name__
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ty = tm(torch.tensor(x))
    fresh = copy.deepcopy(sm)  # still lazy: materialised by load_state_dict below
    sy = sm(sf.tensor(x))
    assert type(sm).__name__ == type(tm).__name__ == name[4:]  # LazyConv2d -> Conv2d
    assert type(sm) is getattr(sf.nn, name[4:])
    assert not sm._forward_pre_hooks and not hasattr(sm, "has_uninitialized_params")  # as torch: a plain layer
    assert tuple(sy.shape) == tuple(ty.shape)
    assert repr(sm) == repr(tm)
    st = tm.state_dict()
    assert list(sm.state_dict()) == list(st)
    for k, v in sm.state_dict().items():
        assert tuple(v.shape) == tuple(st[k].shape), k
    if "Conv" in name or "Linear" in name:  # torch's init bound 1/sqrt(fan_in)
        w = sm.weight.numpy()
        fan_in = w[0].size if "Transpose" not in name else w.shape[1] * np.prod(w.shape[2:])
        assert np.abs(w).max() <= 1 / math.sqrt(fan_in) + 1e-6 and np.abs(w).max() > 0
    # same weights: same values and gradients
    fresh.load_state_dict({k: sf.tensor(v.detach().numpy().copy()) for k, v in st.items()})
    assert type(fresh).__name__ == name and not fresh.has_uninitialized_params()  # loaded, not yet called
    tm.load_state_dict(st)
    xt = torch.tensor(x, requires_grad=True)
    xs = sf.tensor(x, requires_grad=True)
    ty, sy = tm(xt), fresh(xs)
    assert type(fresh).__name__ == name[4:]
    np.testing.assert_allclose(sy.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    (ty ** 2).sum().backward()
    (sy ** 2).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    for (n, tp), (_, sp) in zip(tm.named_parameters(), fresh.named_parameters(), strict=True):
        np.testing.assert_allclose(sp.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=n)
    for k, v in tm.state_dict().items():  # running statistics updated alike
        np.testing.assert_allclose(fresh.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def test_uninitialized_placeholders_like_torch():
    p, tp = sf.nn.UninitializedParameter(), torch.nn.UninitializedParameter()
    assert repr(p) == repr(tp) == "<UninitializedParameter>"
    assert p.requires_grad and isinstance(p, sf.nn.Parameter)
    assert repr(sf.nn.UninitializedBuffer()) == repr(torch.nn.UninitializedBuffer()) == "<UninitializedBuffer>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        p.shape  # noqa: B018
    p.materialize((2, 3), dtype=sf.float64)
    assert type(p) is sf.nn.Parameter and p.shape == (2, 3) and p.dtype == sf.float64
    b = sf.nn.UninitializedBuffer()
    b.materialize((4,))
    assert type(b) is sf.Tensor and b.shape == (4,)
    from shardflow.nn.parameter import is_lazy

    assert is_lazy(sf.nn.UninitializedBuffer()) and not is_lazy(p)


def test_lazy_errors_and_dtype_before_first_call():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        sf.nn.LazyConv2d(2, 3)(sf.ones(2, 3))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        sf.nn.LazyConv1d(4, 1, groups=2)(sf.ones(1, 3, 4))
    m = sf.nn.Sequential(sf.nn.LazyConv1d(4, 3), sf.nn.LazyBatchNorm1d(), sf.nn.Flatten(), sf.nn.LazyLinear(2)).double()
    y = m(sf.ones(2, 3, 6, dtype=sf.float64))
    assert y.dtype == sf.float64 and all(p.dtype == sf.float64 for p in m.parameters())
    assert [type(c).__name__ for c in m] == ["Conv1d", "BatchNorm1d", "Flatten", "Linear"]
    opt = sf.optim.SGD(m.parameters(), lr=0.1)  # an optimizer made after the first call trains it
    y.sum().backward()
    opt.step()
