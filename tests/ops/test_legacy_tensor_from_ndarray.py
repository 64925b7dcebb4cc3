"""``torch.Tensor(ndarray)`` (the legacy constructor) against torch 2.13: the default dtype
whatever the array's dtype. It kept the array's dtype (a documented deviation), so CleanRL's
``torch.Tensor(next_done)`` of gym's bool flags stayed bool and ``1.0 - next_done`` raised,
and ``torch.Tensor(next_obs)`` of float64 observations met float32 weights. Found by
``programs/rl_ad/cleanrl_ppo.py``. shardflow's own ``Tensor(array)`` (pickles, shared
memory, op results) still wraps the array as it is."""

import pickle
import warnings

import numpy as np
import pytest
import torch

import shardflow

ARRAYS = {
    "bool": np.array([True, False]),
    "int64": np.array([1, 2]),
    "int32": np.array([[1], [2]], dtype=np.int32),
    "uint8": np.zeros((2, 2), dtype=np.uint8),
    "float64": np.array([0.1, 2.5]),
    "float64 strided": np.arange(6.0).reshape(2, 3)[:, 1],
    "float32": np.array([1.5], dtype=np.float32),
    "0-d": np.array(3.25),
}


@pytest.mark.parametrize("name", list(ARRAYS))
def test_default_dtype_like_torch(name):
    a = ARRAYS[name]
    s, t = shardflow.Tensor(a), torch.Tensor(a)
    assert str(s.dtype).split(".")[1] == str(t.dtype).split(".")[1] == "float32"
    assert s.tolist() == t.tolist()
    assert tuple(s.shape) == tuple(t.shape)


def test_shares_memory_only_without_conversion_like_torch():
    for lib in (shardflow, torch):
        same = np.zeros(2, dtype=np.float32)
        other = np.zeros(2)
        s, o = lib.Tensor(same), lib.Tensor(other)
        same[0] = other[0] = 5.0
        assert s.tolist() == [5.0, 0.0] and o.tolist() == [0.0, 0.0]


def test_follows_default_dtype():
    shardflow.set_default_dtype(shardflow.float64)
    try:
        assert shardflow.Tensor(np.array([1, 2], dtype=np.int32)).dtype is shardflow.float64
    finally:
        shardflow.set_default_dtype(shardflow.float32)


def test_complex_warns_and_drops_imaginary_like_torch():
    out = []
    for lib in (shardflow, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = lib.Tensor(np.array([1 + 2j]))
        out.append((t.tolist(), [str(x.message).split(" (Triggered")[0] for x in w]))
    assert out[0] == out[1]


def test_rl_idioms_work():
    done = shardflow.Tensor(np.logical_or(np.array([True, False]), np.array([False, False])))
    assert (1.0 - done).tolist() == [0.0, 1.0]
    obs = shardflow.Tensor(np.random.default_rng(0).normal(size=(2, 3)))
    assert shardflow.nn.Linear(3, 1)(obs).shape == (2, 1)


def test_internal_wrapping_keeps_dtypes():
    for t in (shardflow.tensor([1, 2]), shardflow.tensor([True]), shardflow.tensor([1.0], dtype=shardflow.float64)):
        assert pickle.loads(pickle.dumps(t)).dtype is t.dtype
    p = shardflow.nn.Parameter(shardflow.tensor([1.0], dtype=shardflow.float64))
    assert pickle.loads(pickle.dumps(p)).dtype is shardflow.float64
