"""Reading PyTorch ``torch.save`` files with ``shardflow.load`` (restricted unpickler: tensors
and plain containers only), and what ``shardflow.save`` does with what PyTorch would pickle."""

import argparse
import collections
import importlib.util
import io
import os
import pickle
import sys
import zipfile

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.checkpoint import CheckpointError


def _torch_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _assert_same(a, b):
    """shardflow object ``a`` equals torch object ``b`` (recursively, tensors by dtype and value)."""
    if isinstance(b, torch.Tensor):
        assert isinstance(a, sf.Tensor) and str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape) and a.requires_grad == b.requires_grad
        np.testing.assert_array_equal(a.detach().float().numpy() if b.dtype == torch.bfloat16 else a.detach().numpy(),
                                      b.detach().float().numpy() if b.dtype == torch.bfloat16 else b.detach().numpy())
    elif isinstance(b, dict):
        assert type(a) is type(b) and list(a) == list(b)
        for k in b:
            _assert_same(a[k], b[k])
    elif isinstance(b, list | tuple):
        assert type(a) is type(b) or (isinstance(b, torch.Size) and tuple(a) == tuple(b))
        for x, y in zip(a, b, strict=True):
            _assert_same(x, y)
    else:
        assert a == b or (a != a and b != b)


def test_state_dict_saved_by_torch_loads_into_a_shardflow_model(tmp_path):
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Flatten(),
                             torch.nn.Linear(8, 3))
    tm(torch.randn(4, 1, 4, 4))  # move the BatchNorm running stats
    path = tmp_path / "model.pt"
    torch.save(tm.state_dict(), path)
    sd = sf.load(path)
    assert isinstance(sd, collections.OrderedDict)
    _assert_same(sd, torch.load(path))
    sm = sf.nn.Sequential(sf.nn.Conv2d(1, 2, 3), sf.nn.BatchNorm2d(2), sf.nn.Flatten(), sf.nn.Linear(8, 3))
    sm.load_state_dict(sd)
    x = np.random.default_rng(1).standard_normal((2, 1, 4, 4)).astype(np.float32)
    sm.eval()
    tm.eval()
    np.testing.assert_allclose(sm(sf.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_every_dtype_views_and_plain_containers_round_trip():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    obj = {
        "dtypes": [torch.tensor([1.5, 2.0, 0.0], dtype=d) for d in
                   (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                    torch.int16, torch.int8, torch.uint8, torch.bool)],
        "transposed": base.t(),  # strides (1, 6)
        "slice": base[1:3, ::2],  # an offset into a shared storage
        "scalar": torch.tensor(3.25),
        "empty": torch.zeros(0, 3),
        "param": torch.nn.Parameter(torch.ones(2)),
        "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
        "plain": [1, 2.5, "x", None, True, (1, (2, 3)), b"raw", {4, 5}, float("inf")],
        "meta": {"epoch": 3, "dtype": torch.float16, "shape": torch.Size([2, 3])},
        7: "int key",
    }
    got = sf.load(io.BytesIO(_torch_bytes(obj)))
    _assert_same({k: v for k, v in got.items() if k != "meta"}, {k: v for k, v in obj.items() if k != "meta"})
    assert got["meta"] == {"epoch": 3, "dtype": sf.float16, "shape": (2, 3)}
    assert isinstance(got["param"], sf.nn.Parameter)
    # views of one storage share it again, as torch.load makes them (tests/ops/test_storage.py)
    want = torch.load(io.BytesIO(_torch_bytes(obj)))
    got["slice"].array[...] = 0
    want["slice"][...] = 0
    assert got["transposed"].numpy().sum() == want["transposed"].sum().item() != base.sum().item()


def test_optimizer_checkpoint_from_torch_restores_training_state(tmp_path):
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    m(torch.randn(4, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": 5}, path)
    ck = sf.load(path, map_location="cpu", weights_only=False)
    sm = sf.nn.Linear(3, 2)
    sm.load_state_dict(ck["model"])
    sopt = sf.optim.Adam(sm.parameters(), lr=0.01)
    sopt.load_state_dict(ck["optimizer"])
    assert ck["epoch"] == 5
    np.testing.assert_array_equal(sopt.state_dict()["state"][0]["exp_avg"].numpy(),
                                  opt.state_dict()["state"][0]["exp_avg"].numpy())


def test_map_location_forms():
    data = _torch_bytes({"w": torch.ones(2)})
    for ml in (None, "cpu", sf.device("cpu"), {"cpu": "cpu"}, lambda storage, loc: storage,
               lambda storage, loc: None):
        assert sf.load(io.BytesIO(data), map_location=ml)["w"].device == sf.device("cpu")


def _tamper(data: bytes, old: bytes, new: bytes) -> bytes:
    """The same torch.save archive with ``old`` replaced by ``new`` in its pickle."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for n in src.namelist():
            body = src.read(n)
            dst.writestr(n, body.replace(old, new) if n.endswith("data.pkl") else body)
    return out.getvalue()


def test_cuda_saved_storages_need_map_location_on_a_cpu_machine():
    data = _tamper(_torch_bytes({"w": torch.ones(2)}), b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    with pytest.raises(RuntimeError, match="CUDA device.*map_location=shardflow.device\\('cpu'\\)"):
        sf.load(io.BytesIO(data))
    for ml in ("cpu", {"cuda:0": "cpu"}, lambda storage, loc: storage):
        np.testing.assert_array_equal(sf.load(io.BytesIO(data), map_location=ml)["w"].numpy(), [1.0, 1.0])


# ---------------------------------------------------------------- refusals
def _malicious_archive(tmp_path, payload: bytes) -> str:
    path = str(tmp_path / "evil.pt")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("evil/data.pkl", payload)
        z.writestr("evil/byteorder", "little")
    return path


class _RunsCode:
    def __init__(self, flag):
        self.flag = flag

    def __reduce__(self):
        return (os.system, (f"touch {self.flag}",))


def test_malicious_pickle_is_refused_before_anything_runs(tmp_path):
    flag = tmp_path / "pwned"
    payload = pickle.dumps({"weight": _RunsCode(flag)}, protocol=2)
    path = _malicious_archive(tmp_path, payload)
    with pytest.raises(CheckpointError, match=r"names the global 'posix.system'.*runs code from the file"):
        sf.load(path)
    with pytest.raises(CheckpointError, match="weights_only=False"):
        sf.load(path, weights_only=True)
    assert not flag.exists()  # (weights_only=False would run it: the caller's statement of trust)
    # a raw (non-zip) pickle is not even opened as a pickle
    raw = tmp_path / "evil.pkl"
    raw.write_bytes(payload)
    with pytest.raises(CheckpointError, match="evil.pkl is a Python pickle stream, not a zip"):
        sf.load(raw)
    assert not flag.exists()


@pytest.mark.parametrize("payload, message", [
    (b"\x80\x02cbuiltins\neval\nX\x05\x00\x00\x001 + 1\x85R.", "global 'builtins.eval'"),  # GLOBAL + REDUCE
    (b"\x80\x02c__builtin__\ngetattr\n.", "global 'builtins.getattr'"),  # Python 2 spelling
    (b"\x80\x04\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06getcwd\x94\x93\x94)R.",
     "global 'os.getcwd'"),  # STACK_GLOBAL (protocol 4)
    # BUILD on a class: would set attributes of collections.OrderedDict itself
    (b"\x80\x02ccollections\nOrderedDict\n}X\x01\x00\x00\x00aK\x01sb.", "sets the state of a type"),
], ids=["eval", "getattr", "stack_global", "build_on_class"])
def test_disallowed_opcodes_and_globals_are_refused(tmp_path, payload, message):
    with pytest.raises(CheckpointError, match=message):
        sf.load(_malicious_archive(tmp_path, payload))


def test_out_of_bounds_tensor_layout_is_refused():
    data = _torch_bytes({"w": torch.ones(4)})
    # size (4,) -> (9,): would read past the 4-element storage
    bad = _tamper(data, b"K\x04\x85", b"K\x09\x85")
    with pytest.raises(CheckpointError, match="reads element 8 of a storage of 4"):
        sf.load(io.BytesIO(bad))


# ---------------------------------------------------------------- whole modules (pickled)
# PyTorch's word_language_model/model.py, as a program defines it. The shardflow program is
# the same file with ``import torch...`` changed to ``import shardflow...``.
_WLM_SOURCE = """
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden
"""
_WLM_NAME = "sf_test_wlm_model"  # the module path the pickle names, in both programs


def _program_module(tmp_path, monkeypatch, lib: str):
    """Import the model file as module ``_WLM_NAME``, written for ``lib`` (torch or shardflow)."""
    folder = tmp_path / lib
    folder.mkdir()
    path = folder / f"{_WLM_NAME}.py"
    path.write_text(_WLM_SOURCE.replace("import torch.", f"import {lib}."))
    spec = importlib.util.spec_from_file_location(_WLM_NAME, path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, _WLM_NAME, mod)
    spec.loader.exec_module(mod)
    return mod


def _wlm_outputs(model, lib, tokens):
    hidden = tuple(lib.zeros(2, 3, 4) for _ in range(2))
    out, (h, c) = model(lib.tensor(tokens), hidden)
    return [t.detach().numpy() for t in (out, h, c)]


def test_word_language_model_whole_module_saved_by_torch_loads_with_weights_only_false(tmp_path, monkeypatch):
    torch.manual_seed(0)
    tm = _program_module(tmp_path, monkeypatch, "torch").RNNModel("LSTM", 10, 4, 4, 2, tie_weights=True).eval()
    path = tmp_path / "model.pt"
    with open(path, "wb") as f:
        torch.save(tm, f)  # main.py: torch.save(model, f)
    sf_module = _program_module(tmp_path, monkeypatch, "shardflow")
    with open(path, "rb") as f:  # the safe default refuses, naming the exact fix
        with pytest.raises(CheckpointError, match=(
                rf"model.pt names the global '{_WLM_NAME}.RNNModel' \(a whole model saved with "
                r"torch.save\(model\)\).*shardflow.load\(path, weights_only=False\).*add_safe_globals")):
            sf.load(f)
    with open(path, "rb") as f:
        sm = sf.load(f, weights_only=False)  # main.py: torch.load(f, weights_only=False)
    assert type(sm) is sf_module.RNNModel and isinstance(sm.rnn, sf.nn.LSTM)
    assert sm.decoder.weight is sm.encoder.weight  # the tie survives
    assert (sm.rnn_type, sm.nhid, sm.nlayers, sm.training) == ("LSTM", 4, 2, False)
    sm.rnn.flatten_parameters()
    tokens = np.random.default_rng(0).integers(0, 10, (5, 3))
    for got, want in zip(_wlm_outputs(sm, sf, tokens), _wlm_outputs(tm, torch, tokens)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert list(sm.state_dict()) == list(tm.state_dict())
    # it trains on
    sm.train()
    loss = sm(sf.tensor(tokens), tuple(sf.zeros(2, 3, 4) for _ in range(2)))[0].mean()
    loss.backward()
    assert sm.encoder.weight.grad is not None and sm.rnn.weight_hh_l1.grad is not None


def test_allow_listed_classes_load_a_whole_module_with_weights_only_true(tmp_path, monkeypatch):
    tm = _program_module(tmp_path, monkeypatch, "torch").RNNModel("GRU", 10, 4, 4, 2)
    data = _torch_bytes(tm)
    prog = _program_module(tmp_path, monkeypatch, "shardflow")
    needed = [prog.RNNModel, sf.nn.Dropout, sf.nn.Embedding, sf.nn.GRU]
    with sf.serialization.safe_globals(needed):  # Linear is missing: named in the error
        with pytest.raises(CheckpointError, match=r"'torch.nn.modules.linear.Linear'.*add_safe_globals\(\[shardflow.nn.Linear"):
            sf.load(io.BytesIO(data))
    with sf.serialization.safe_globals(needed + [sf.nn.Linear]):
        sm = sf.load(io.BytesIO(data), weights_only=True)
    assert type(sm) is prog.RNNModel and isinstance(sm.rnn, sf.nn.GRU)
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(sm.state_dict()[k].numpy(), v.numpy())
    sf.serialization.add_safe_globals(needed + [sf.nn.Linear])
    try:
        assert type(sf.load(io.BytesIO(data))) is prog.RNNModel
    finally:
        sf.serialization.clear_safe_globals()


def test_shardflow_saves_a_whole_module_as_torch_does(tmp_path, monkeypatch):
    prog = _program_module(tmp_path, monkeypatch, "shardflow")
    sf.manual_seed(0)
    model = prog.RNNModel("LSTM", 10, 4, 4, 2, tie_weights=True).eval()
    path = tmp_path / "model.pt"
    sf.save(model, path)  # a pickle in torch.save's zip format
    assert path.read_bytes()[:4] == b"PK\x03\x04"
    with pytest.raises(CheckpointError, match="weights_only=False"):
        sf.load(path)
    back = sf.load(path, weights_only=False)
    assert type(back) is prog.RNNModel and back.decoder.weight is back.encoder.weight
    tokens = np.random.default_rng(1).integers(0, 10, (5, 3))
    for got, want in zip(_wlm_outputs(back, sf, tokens), _wlm_outputs(model, sf, tokens)):
        np.testing.assert_array_equal(got, want)
    with sf.serialization.safe_globals([prog.RNNModel, sf.nn.Dropout, sf.nn.Embedding, sf.nn.LSTM, sf.nn.Linear]):
        assert type(sf.load(path)) is prog.RNNModel


@pytest.mark.parametrize("make, shape", [
    (lambda: torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3), torch.nn.ReLU(),
                                 torch.nn.MaxPool2d(2), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()), (2, 2, 4, 4)),
    (lambda: torch.nn.LSTM(4, 3, num_layers=2, bidirectional=True, batch_first=True), (2, 5, 4)),
    (lambda: torch.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, activation="gelu", batch_first=True), (2, 3, 4)),
    (lambda: torch.nn.ModuleDict({"a": torch.nn.Linear(4, 2), "n": torch.nn.LayerNorm(2)}), (3, 4)),
], ids=["cnn", "lstm", "transformer_gelu", "moduledict"])
def test_torch_modules_saved_whole_load_as_the_shardflow_modules(make, shape):
    torch.manual_seed(0)
    tm = make().eval()
    sm = sf.load(io.BytesIO(_torch_bytes(tm)), weights_only=False).eval()
    assert type(sm).__name__ == type(tm).__name__ and type(sm).__module__.startswith("shardflow.nn")
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    if isinstance(tm, torch.nn.ModuleDict):
        want = tm["n"](tm["a"](torch.tensor(x)))
        got = sm["n"](sm["a"](sf.tensor(x)))
    else:
        want, got = tm(torch.tensor(x)), sm(sf.tensor(x))
    if isinstance(want, tuple):
        want, got = want[0], got[0]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_checkpoint_with_a_non_tensor_object_is_pickled_and_torch_reads_it(tmp_path):
    ck = {"model": {"w": sf.ones(2, 3, dtype=sf.bfloat16)}, "p": sf.nn.Parameter(sf.zeros(2)),
          "args": argparse.Namespace(lr=0.1, model="LSTM"), "dtype": sf.float16, "shape": sf.Size([2, 3])}
    path = tmp_path / "ckpt.pt"
    sf.save(ck, path)
    t = torch.load(path, weights_only=False)  # PyTorch reads shardflow's pickled file
    assert t["args"] == ck["args"] and t["dtype"] == torch.float16 and t["shape"] == torch.Size([2, 3])
    assert t["model"]["w"].dtype == torch.bfloat16 and isinstance(t["p"], torch.nn.Parameter)
    with pytest.raises(CheckpointError, match="argparse.Namespace.*weights_only=False"):
        sf.load(path)
    back = sf.load(path, weights_only=False)
    assert back["args"] == ck["args"] and back["dtype"] is sf.float16 and back["shape"] == (2, 3)
    assert isinstance(back["p"], sf.nn.Parameter) and back["model"]["w"].dtype == sf.bfloat16
    with pytest.raises(TypeError, match="metadata= is stored in safetensors"):
        sf.save(ck, tmp_path / "x.pt", metadata={"a": "b"})
    # a non-leaf tensor that requires grad is written as torch writes it (torch.save accepts it)
    sf.save({"x": sf.ones(2, requires_grad=True) * 2, "o": object()}, tmp_path / "y.pt")
    back = sf.load(tmp_path / "y.pt", weights_only=False)
    assert back["x"].tolist() == [2.0, 2.0] and back["x"].requires_grad


def test_add_safe_globals_allows_a_trusted_global():
    data = _torch_bytes({"lr_lambda": collections.Counter({"a": 1})})
    with pytest.raises(CheckpointError, match="collections.Counter"):
        sf.load(io.BytesIO(data))
    with sf.serialization.safe_globals([collections.Counter]):
        assert sf.load(io.BytesIO(data))["lr_lambda"] == collections.Counter({"a": 1})
        assert collections.Counter in sf.serialization.get_safe_globals()
    with pytest.raises(CheckpointError):
        sf.load(io.BytesIO(data))


def test_shardflow_save_stays_safetensors_and_round_trips(tmp_path):
    path = tmp_path / "ckpt.pt"  # the suffix does not change the format
    sf.save({"w": sf.ones(2), "step": 3}, path)
    assert path.read_bytes()[:4] != b"PK\x03\x04"
    got = sf.load(path)
    assert got["step"] == 3 and got["w"].numpy().tolist() == [1.0, 1.0]
    assert sf.serialization.save is sf.save and sf.serialization.load is sf.load
