"""Checkpoints: round trips, PyTorch interop, atomic writes, refusal of bad files."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from safetensors.torch import load_file as torch_load_file
from safetensors.torch import save_file as torch_save_file

import shardflow as sf
from shardflow import checkpoint as ck


def _state():
    g = np.random.default_rng(0)
    return {
        "model": {"fc.weight": sf.tensor(g.standard_normal((3, 4)).astype(np.float32)),
                  "fc.bias": sf.tensor(g.standard_normal(3).astype(np.float32)),
                  "emb/weight": sf.tensor(np.arange(6, dtype=np.int64))},
        "optimizer": {"state": {0: {"step": sf.tensor(3.0), "exp_avg": sf.ones(4)}},
                      "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1],
                                        "eps": float("inf"), "name": None}]},
        "scheduler": {"last_epoch": 7, "_last_lr": [0.5]},
        "rng": sf.get_rng_state(),
        "step": 11,
        "dtype": sf.bfloat16,
    }


def _assert_same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, sf.Tensor):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy().astype(np.float64), b.numpy().astype(np.float64))
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _assert_same(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    else:
        assert a == b


def test_nested_round_trip(tmp_path):
    s = _state()
    p = tmp_path / "c.safetensors"
    sf.save(s, p)
    _assert_same(s, sf.load(p))
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    with open(p, "rb") as f:  # the file is an ordinary safetensors file
        assert f.read(8) != b"PK\x03\x04"
    keys = set(torch_load_file(str(p)))
    assert "model/fc.weight" in keys and "model/emb%2Fweight" in keys
    assert "optimizer/state/0/exp_avg" in keys


def test_bfloat16_and_dtypes(tmp_path):
    vals = np.array([1.5, -2.25, 3e-3], dtype=np.float32)
    d = {n: sf.tensor(vals).to(getattr(sf, n)) for n in ("bfloat16", "float16", "float64")}
    d["i8"] = sf.tensor(np.array([-3, 4], np.int8))
    d["b"] = sf.tensor(np.array([True, False]))
    ck.save_file(d, tmp_path / "d.safetensors")
    back = ck.load_file(tmp_path / "d.safetensors")
    for k in d:
        _assert_same(d[k], back[k])
    theirs = torch_load_file(str(tmp_path / "d.safetensors"))
    assert theirs["bfloat16"].dtype == torch.bfloat16
    np.testing.assert_array_equal(theirs["bfloat16"].float().numpy(), d["bfloat16"].float().numpy())


def test_loads_pytorch_safetensors_and_vice_versa(tmp_path):
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    sd = {k: v.contiguous() for k, v in tm.state_dict().items()}
    sd["half"] = torch.randn(3).to(torch.bfloat16)
    torch_save_file(sd, str(tmp_path / "t.safetensors"))
    ours = sf.load(tmp_path / "t.safetensors")
    assert set(ours) == set(sd)
    for k in sd:
        np.testing.assert_array_equal(ours[k].float().numpy(), sd[k].float().numpy())
    ck.save_file(ours, tmp_path / "o.safetensors")
    again = torch_load_file(str(tmp_path / "o.safetensors"))
    for k in sd:
        assert torch.equal(again[k], sd[k])
    tm2 = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    sf.save({k: v for k, v in ours.items() if k != "half"}, tmp_path / "m.safetensors")
    tm2.load_state_dict(torch_load_file(str(tmp_path / "m.safetensors")))
    x = torch.randn(2, 4)
    assert torch.equal(tm(x), tm2(x))


def test_truncated_and_corrupt_files_refused(tmp_path):
    p = tmp_path / "c.safetensors"
    sf.save(_state(), p)
    data = p.read_bytes()
    for cut in (3, 20, len(data) - 5):
        q = tmp_path / f"cut{cut}.safetensors"
        q.write_bytes(data[:cut])
        with pytest.raises(ck.CheckpointError, match=f"{q.name}.*(truncated|corrupt)"):
            sf.load(q)
    bad = bytearray(data)
    bad[-3] ^= 0xFF  # a flipped bit in the tensor data
    (tmp_path / "flip.safetensors").write_bytes(bytes(bad))
    with pytest.raises(ck.CheckpointError, match="flip.safetensors is corrupt: CRC-32"):
        sf.load(tmp_path / "flip.safetensors")
    hdr = bytearray(data)
    hdr[10] = ord("{")  # broken JSON
    (tmp_path / "hdr.safetensors").write_bytes(bytes(hdr))
    with pytest.raises(ck.CheckpointError, match="hdr.safetensors is corrupt"):
        sf.load(tmp_path / "hdr.safetensors")
    with pytest.raises(FileNotFoundError, match="nope.safetensors"):
        sf.load(tmp_path / "nope.safetensors")


def test_pickle_files_refused(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "model.pt")
    # the safetensors reader refuses it; shardflow.load reads it with a restricted
    # unpickler instead (tests/test_pt_files.py)
    with pytest.raises(ck.CheckpointError, match=r"model\.pt is a zip archive .*torch\.save.*pickle"):
        ck.load(tmp_path / "model.pt")
    (tmp_path / "raw.pkl").write_bytes(pickle.dumps({"w": [1, 2]}))
    with pytest.raises(ck.CheckpointError, match=r"raw\.pkl is a Python pickle"):
        sf.load(tmp_path / "raw.pkl")
    torch.save({"w": torch.ones(2)}, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(ck.CheckpointError, match="legacy.pt is a Python pickle"):
        sf.load(tmp_path / "legacy.pt")


def test_unsupported_objects_named_by_path(tmp_path):
    # a local lambda: torch's pickler raises AttributeError ("Can't pickle local object"), and
    # so does shardflow's, its message naming where in the checkpoint the object sits
    with pytest.raises(AttributeError, match="optimizer/fn"):
        sf.save({"optimizer": {"fn": lambda x: x}}, tmp_path / "x.safetensors")
    assert not os.listdir(tmp_path)  # nothing half-written


def test_interrupted_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    p = tmp_path / "c.safetensors"
    first = _state()
    sf.save(first, p)
    from shardflow.checkpoint import safetensors as st

    real_write = st.write

    def dying_write(f, arrays, meta):
        real_write(f, arrays, meta)
        f.truncate(f.tell() // 2)  # half the bytes, then the "crash"
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(st, "write", dying_write)
    second = _state()
    second["step"] = 12
    with pytest.raises(KeyboardInterrupt):
        sf.save(second, p)
    monkeypatch.setattr(st, "write", real_write)
    _assert_same(first, sf.load(p))
    assert os.listdir(tmp_path) == ["c.safetensors"]  # the temp file was removed


def test_killed_process_during_save_keeps_previous_checkpoint(tmp_path):
    p = tmp_path / "ckpt_000001.safetensors"
    sf.save({"w": sf.ones(3), "step": 1}, p)
    script = textwrap.dedent(f"""
        import os, sys, time
        import numpy as np
        import shardflow as sf
        real_fsync = os.fsync
        def slow_fsync(fd):
            print("written", flush=True)
            time.sleep(60)
        os.fsync = slow_fsync
        sf.save({{"w": sf.tensor(np.zeros(2_000_000, np.float32)), "step": 2}}, {str(p)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "written"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    leftovers = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert leftovers  # the kill left a temp file behind ...
    back = sf.load(p)  # ... but the checkpoint itself is the old one, intact
    assert back["step"] == 1 and back["w"].tolist() == [1.0, 1.0, 1.0]
    assert ck.find_latest(tmp_path) == str(p)


def test_find_latest_skips_corrupt_newest(tmp_path):
    sf.save({"step": 1}, tmp_path / "ckpt_000010.safetensors")
    sf.save({"step": 2, "w": sf.ones(100)}, tmp_path / "ckpt_000020.safetensors")
    data = (tmp_path / "ckpt_000020.safetensors").read_bytes()
    (tmp_path / "ckpt_000020.safetensors").write_bytes(data[:-10])
    assert ck.find_latest(tmp_path).endswith("ckpt_000010.safetensors")
    assert ck.find_latest(tmp_path / "missing") is None


def test_load_model_checks_before_writing(tmp_path):
    from shardflow import nn  # the package's own module: a failed import must fail the test
    m = nn.Linear(4, 3)
    ck.save_model(m, tmp_path / "m.safetensors")
    m2 = nn.Linear(4, 3)
    ck.load_model(m2, tmp_path / "m.safetensors")
    np.testing.assert_array_equal(m2.weight.numpy(), m.weight.numpy())
    wrong = nn.Linear(5, 3)
    before = wrong.weight.numpy().copy(), wrong.bias.numpy().copy()
    with pytest.raises(ck.CheckpointError, match=r"m.safetensors: tensor 'weight' has shape \[3, 4\] in the file but the model expects \[3, 5\]"):
        ck.load_model(wrong, tmp_path / "m.safetensors")
    np.testing.assert_array_equal(wrong.weight.numpy(), before[0])
    np.testing.assert_array_equal(wrong.bias.numpy(), before[1])  # bias untouched too
    ck.save_file({"weight": m.weight, "extra": m.bias}, tmp_path / "k.safetensors")
    with pytest.raises(ck.CheckpointError, match=r"k.safetensors does not match Linear: missing keys \['bias'\], unexpected keys \['extra'\]"):
        ck.load_model(m2, tmp_path / "k.safetensors")
