"""In-process checks of RPC's pieces (no workers): options, the value codec, the frame
format, futures (against torch.futures)."""

import numpy as np
import pytest

import shardflow as sf
import shardflow.futures as sffut
from shardflow.distributed.rpc import TensorPipeRpcBackendOptions
from shardflow.distributed.rpc import frame as F
from shardflow.distributed.rpc import secret as S
from shardflow.distributed.rpc.codec import Decoder, Encoder, register_class, resolve, values_from
from shardflow.distributed.rpc.errors import RPCProtocolError
from shardflow.distributed.wire_arrays import WireFormatError


def test_options_defaults_and_device_map_checks(monkeypatch):
    o = TensorPipeRpcBackendOptions()
    assert (o.num_worker_threads, o.rpc_timeout, o.init_method) == (16, 60.0, "env://")
    o.set_device_map("worker1", {"cpu": "cpu"})
    assert list(o.device_maps) == ["worker1"]
    with pytest.raises(ValueError, match="does not exist here"):
        TensorPipeRpcBackendOptions(device_maps={"w": {"cuda:0": "cuda:0"}})  # no GPU here
    with pytest.raises(ValueError, match="rpc_timeout"):
        TensorPipeRpcBackendOptions(rpc_timeout=-1)
    import shardflow.accelerator

    monkeypatch.setattr(shardflow.accelerator, "device_count", lambda: 2)  # as on a 2-GPU host
    o = TensorPipeRpcBackendOptions(device_maps={"w": {0: 1, "cuda:1": "cuda:0"}}, devices=["cuda:1"])
    assert o.device_maps["w"] == {sf.device("cuda:0"): sf.device("cuda:1"), sf.device("cuda:1"): sf.device("cuda:0")}
    with pytest.raises(ValueError, match="one-to-one"):
        o.set_device_map("w", {"cuda:1": "cuda:1"})      # cuda:0 and cuda:1 would both go to cuda:1
    with pytest.raises(ValueError, match="does not exist here"):
        o.set_devices(["cuda:2"])


@register_class
class Box:
    def __init__(self, v):
        self.v = v


class NotRegistered:
    pass


def _round_trip(value):
    enc = Encoder()
    tree = enc.encode(value)
    offsets, plen = F.layout(enc.arrays)
    for m, off in zip(enc.meta, offsets):
        m[2] = off
    header = F.parse_header(F.encode_header({"v": tree, "b": enc.meta}))
    payload = np.frombuffer(b"".join(bytes(p) for p in F.parts(b"", enc.arrays, offsets, plen)[1:]),
                            np.uint8).copy() if plen else None
    values = values_from(F.buffers(header, payload), header["b"])
    return Decoder(values).decode(header["v"])


def test_codec_round_trip_without_copies_on_the_way_out():
    t = sf.arange(6, dtype=sf.float32).reshape(2, 3)
    value = {"t": t, "same": t, "x": [1, 2.5, None, "s", (Box(3), {1: b"ab"})], "nan": float("nan")}
    enc = Encoder()
    enc.encode(value)
    assert len(enc.arrays) == 2 and np.shares_memory(enc.arrays[0], t.array)  # t once, bytes once
    back = _round_trip(value)
    assert back["t"] is back["same"] and back["t"].tolist() == t.tolist()
    assert isinstance(back["x"][4][0], Box) and back["x"][4][0].v == 3 and back["x"][4][1] == {1: b"ab"}
    assert np.isnan(back["nan"])


def test_decoder_refuses_what_the_receiver_did_not_allow():
    with pytest.raises(RPCProtocolError, match="not registered"):
        Decoder([]).decode({"$C": f"{NotRegistered.__module__}:NotRegistered", "s": {"$d": []}})
    with pytest.raises(RPCProtocolError, match="unknown value tag"):
        Decoder([]).decode({"$X": 1})
    with pytest.raises(RPCProtocolError, match="malformed value"):
        Decoder([]).decode({"a": 1, "b": 2, "c": 3})
    with pytest.raises(RPCProtocolError, match="dunder"):
        resolve("builtins:__import__")
    with pytest.raises(RPCProtocolError, match="not a function or class"):
        resolve("os:environ")
    with pytest.raises(RPCProtocolError, match="malformed"):
        resolve("os.system; rm -rf /:x")
    assert resolve("numpy:add") is np.add


def test_frame_prefix_and_buffer_checks():
    good = F.PREFIX.pack(S.MAGIC, S.VERSION, 0, 0, 10, 0)
    assert F.parse_prefix(good) == (10, 0)
    with pytest.raises(WireFormatError, match="not a shardflow RPC frame"):
        F.parse_prefix(F.PREFIX.pack(b"HTTP", 1, 0, 0, 1, 0))
    with pytest.raises(WireFormatError, match="version 9"):
        F.parse_prefix(F.PREFIX.pack(S.MAGIC, 9, 0, 0, 1, 0))
    with pytest.raises(WireFormatError, match="outside"):
        F.buffers({"b": [["float32", [4], 0, 1]]}, np.zeros(8, np.uint8))
    with pytest.raises(WireFormatError, match="unknown dtype"):
        F.buffers({"b": [["object", [1], 0, 1]]}, np.zeros(8, np.uint8))


def test_futures_match_torch_futures():
    torch = pytest.importorskip("torch")
    for lib in (torch.futures, sffut):
        f = lib.Future()
        chained = f.then(lambda fut: fut.wait() + 1)
        failing = f.then(lambda fut: 1 / 0)
        assert not f.done()
        f.set_result(1)
        assert f.done() and f.wait() == 1 and f.value() == 1 and chained.wait() == 2
        with pytest.raises(RuntimeError, match="Got the following error when running the callback"):
            failing.wait()
        with pytest.raises(RuntimeError, match="can only be marked completed once"):
            f.set_result(2)
        g = lib.Future()
        g.set_exception(ValueError("x"))
        with pytest.raises(ValueError, match="x"):
            g.wait()
        futs = [lib.Future() for _ in range(3)]
        all_done = lib.collect_all(futs)
        for i, x in enumerate(futs):
            x.set_result(i)
        assert [x.wait() for x in all_done.wait()] == [0, 1, 2]
        assert lib.wait_all(futs) == [0, 1, 2]
