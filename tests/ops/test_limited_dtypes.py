"""uint16/uint32/uint64 and the float8 dtypes against torch 2.13: dtype attributes, promotion
(results and torch's refusals), float8 conversions bit for bit, and the ops torch runs on them."""

import os
import re

import ml_dtypes
import numpy as np
import pytest
import torch

import shardflow as sf

UINTS = ("uint16", "uint32", "uint64")
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
ALL_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
             "float64", "complex64", "complex128", *UINTS, *FLOAT8)


def test_dtype_attributes_match_torch():
    for name in UINTS + FLOAT8:
        s, t = getattr(sf, name), getattr(torch, name)
        assert (s.is_floating_point, s.is_signed, s.itemsize, s.is_complex) == (
            t.is_floating_point, t.is_signed, t.itemsize, t.is_complex), name
    for name in UINTS:
        assert sf.iinfo(getattr(sf, name)).max == torch.iinfo(getattr(torch, name)).max
    for name in FLOAT8:
        s, t = sf.finfo(getattr(sf, name)), torch.finfo(getattr(torch, name))
        assert (s.bits, s.max, s.min, s.eps, s.tiny, s.resolution) == (
            t.bits, t.max, t.min, t.eps, t.tiny, t.resolution), name


def test_promotion_matches_torch_including_its_refusals():
    for a in ALL_NAMES:
        for b in ALL_NAMES:
            try:
                want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]
            except RuntimeError as e:
                with pytest.raises(RuntimeError, match=re.escape(str(e))):
                    sf.promote_types(getattr(sf, a), getattr(sf, b))
                continue
            assert sf.promote_types(getattr(sf, a), getattr(sf, b)).name == want, (a, b)


def _float_sources():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 448, 464, 480, 57344, 61440, 65536, 1e-9,
                        2.0**-10, 2.0**-9, 1.5 * 2.0**-7, -1000.0], np.float32)
    scaled = (rng.standard_normal(20000) * rng.choice([1e-4, 1e-2, 1, 100, 1e4], 20000)).astype(np.float32)
    return np.concatenate([bits.view(np.float32), special, scaled])


@pytest.mark.parametrize("name", FLOAT8)
def test_float8_conversions_are_bit_identical_to_torch(name):
    f32 = _float_sources()
    with np.errstate(over="ignore", invalid="ignore"):
            sources = {"float32": f32, "float64": f32.astype(np.float64) * 1.0000001,
                   "float16": f32.astype(np.float16), "bfloat16": f32.astype(ml_dtypes.bfloat16)}
    for src, arr in sources.items():
        t_in = torch.from_numpy(arr) if src != "bfloat16" else torch.from_numpy(arr.astype(np.float32)).bfloat16()
        want = t_in.to(getattr(torch, name)).view(torch.uint8).numpy()
        got = sf.from_numpy(arr).to(getattr(sf, name)).numpy().view(np.uint8)
        nan = np.isnan(arr.astype(np.float32))
        assert np.array_equal(got[~nan], want[~nan]), (name, src)
        assert np.isnan(got[nan].view(getattr(ml_dtypes, name)).astype(np.float32)).all()
    every = np.arange(256, dtype=np.uint8)
    back_t = torch.from_numpy(every.copy()).view(getattr(torch, name)).float().numpy()
    back_s = sf.from_numpy(every.view(getattr(ml_dtypes, name))).float().numpy()
    assert np.array_equal(back_s, back_t, equal_nan=True)
    # the other ways into a float8 tensor convert the same way
    vals = [1000.0, -3.0, 0.1]
    want = torch.tensor(vals).to(getattr(torch, name)).float().numpy()
    assert np.array_equal(sf.tensor(vals, dtype=getattr(sf, name)).float().numpy(), want, equal_nan=True)
    assert np.array_equal(sf.zeros(3, dtype=getattr(sf, name)).copy_(sf.tensor(vals)).float().numpy(), want,
                          equal_nan=True)
    ts = sf.zeros(3, dtype=getattr(sf, name))._typed_storage()
    ts[0] = vals[0]
    assert np.array_equal(ts.tolist()[:1], want[:1], equal_nan=True)


def test_float8_ops_torch_runs():
    for name in FLOAT8:
        s = sf.tensor([1.5, -2.0, 0.25], dtype=getattr(sf, name))
        t = torch.tensor([1.5, -2.0, 0.25], dtype=getattr(torch, name))
        assert s.tolist() == t.tolist() and s[0].item() == t[0].item()
        assert (s == s).tolist() == (t == t).tolist()
        assert sf.cat([s, s]).tolist() == torch.cat([t, t]).tolist() and sf.cat([s, s]).dtype == getattr(sf, name)
        assert s.abs().tolist() == t.abs().tolist() and s[1:].tolist() == t[1:].tolist()
        assert sf.where(s > 0, s, s).dtype == getattr(sf, name)
        assert sf.ones(2, dtype=getattr(sf, name), requires_grad=True).requires_grad
        assert repr(s).endswith(f"dtype=shardflow.{name})")
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
        sf.ones(2, dtype=sf.float8_e4m3fn) * sf.ones(2)


def test_unsigned_tensors_and_the_ops_torch_runs():
    for name in UINTS:
        sd, td = getattr(sf, name), getattr(torch, name)
        s, t = sf.tensor([1, 2, 3], dtype=sd), torch.tensor([1, 2, 3], dtype=td)
        s2, t2 = sf.tensor([3, 2, 1], dtype=sd), torch.tensor([3, 2, 1], dtype=td)
        pairs = [(s * s2, t * t2), (s / s2, t / t2), (s == s2, t == t2), (s.sum(), t.sum()), (s.prod(), t.prod()),
                 (s.cumsum(0), t.cumsum(0)), (s.float(), t.float()), (s * 2, t * 2), (s * 2.5, t * 2.5),
                 (s + sf.ones(3), t + torch.ones(3)), (sf.cat([s, s2]), torch.cat([t, t2])), (s & s2, t & t2),
                 (s2.sort().values, t2.sort().values), (sf.unique(s2), torch.unique(t2)), (s[1:], t[1:]),
                 (sf.zeros(2, dtype=sd), torch.zeros(2, dtype=td)), (s.any(), t.any())]
        for got, want in pairs:
            assert got.tolist() == want.tolist() and got.dtype.name == str(want.dtype).split(".")[-1], name
        assert sf.tensor([1.7, 300000.0]).to(sd).tolist() == torch.tensor([1.7, 300000.0]).to(td).tolist()
        with pytest.raises(RuntimeError, match=re.escape(f"attempted to promote {name.replace('uint', 'UInt')} and Long")):
            s + sf.tensor([1])
        with pytest.raises(RuntimeError, match="mean"):
            s.mean()
    big = sf.tensor([2**63], dtype=sf.uint64)
    assert big.tolist() == torch.tensor([2**63], dtype=torch.uint64).tolist()
    assert sf.from_numpy(np.ones(2, np.uint32)).dtype == sf.uint32


def test_safetensors_round_trip_with_torch(tmp_path):
    from safetensors.torch import load_file, save_file

    path = os.path.join(tmp_path, "a.safetensors")
    x, u = sf.tensor([1.5, 1000, -2], dtype=sf.float8_e4m3fn), sf.tensor([1, 60000], dtype=sf.uint16)
    sf.save({"x": x, "u": u}, path)
    t = load_file(path)
    assert t["x"].dtype == torch.float8_e4m3fn and t["x"].float().tolist() == [1.5, 448.0, -2.0]
    assert t["u"].dtype == torch.uint16 and t["u"].tolist() == [1, 60000]
    save_file({"y": torch.tensor([0.5], dtype=torch.float8_e5m2), "v": torch.tensor([7], dtype=torch.uint32)}, path)
    back = sf.load(path)
    assert back["y"].dtype == sf.float8_e5m2 and back["y"].tolist() == [0.5]
    assert back["v"].dtype == sf.uint32 and back["v"].tolist() == [7]


def test_torch_save_files_round_trip(tmp_path):
    import argparse

    for name in UINTS + FLOAT8:
        path = os.path.join(tmp_path, f"{name}.pt")
        x = torch.tensor([1, 2, 3.5]).to(getattr(torch, name))
        torch.save({"a": x, "v": x[1:]}, path)  # torch's _rebuild_tensor_v3 over an UntypedStorage
        back = sf.load(path)
        assert back["a"].dtype == getattr(sf, name) and back["v"].tolist() == x[1:].tolist()
        # shardflow's torch.save format (a pickle: the Namespace cannot go to safetensors)
        sf.save({"a": sf.tensor([1, 2, 3.5]).to(getattr(sf, name)), "ns": argparse.Namespace(k=1)}, path)
        t = torch.load(path, weights_only=False)
        assert t["a"].dtype == getattr(torch, name) and t["a"].tolist() == x.tolist()
