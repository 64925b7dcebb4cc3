"""A safetensors checkpoint whose header is 0x180..0x580 bytes long starts with the bytes of a
pickle's protocol mark (``\\x80 \\x01``..``\\x05``): ``shardflow.load`` refused such a file,
written by ``shardflow.save`` itself, as "a Python pickle stream" (the quickstart tutorial's
``torch.save(model.state_dict(), "model.pth")`` then ``torch.load`` hit it). Real raw
pickles are still refused."""

import pickle
import struct

import numpy as np
import pytest

import shardflow
from shardflow.checkpoint.safetensors import CheckpointError, is_raw_pickle


def _header_length(path, extra):
    state = {"w" * (1 + extra): shardflow.ones(2), "bias": shardflow.zeros(3)}
    shardflow.save(state, path)
    return struct.unpack("<Q", path.read_bytes()[:8])[0], state


def _state_with_header_length(path, target):
    """Save a state dict whose key length makes the safetensors header ``target`` bytes long
    (a multiple of 8: the header is padded); return it."""
    n0, _ = _header_length(path, 0)
    n1, _ = _header_length(path, 100)
    guess = (target - n0) * 100 // (n1 - n0)
    for extra in sorted(range(max(0, guess - 12), guess + 12), key=lambda e: abs(e - guess)):
        n, state = _header_length(path, extra)
        if n == target:
            return state
    pytest.fail(f"no key length gave a {target}-byte header")


@pytest.mark.parametrize("high_byte", [1, 2, 5])
def test_own_checkpoint_with_pickle_like_header_length_loads(tmp_path, high_byte):
    path = tmp_path / "model.pth"
    state = _state_with_header_length(path, 0x80 + 256 * high_byte)
    assert path.read_bytes()[:2] == bytes([0x80, high_byte])
    for loaded in (shardflow.load(path), shardflow.load(path, weights_only=True), shardflow.load(open(path, "rb"))):
        assert list(loaded) == list(state)
        for k, v in state.items():
            np.testing.assert_array_equal(loaded[k].numpy(), v.numpy())


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_raw_pickle_still_refused(tmp_path, protocol):
    path = tmp_path / "legacy.pt"
    path.write_bytes(pickle.dumps({"w": [1.0, 2.0], "name": "x" * 300}, protocol=protocol))
    assert is_raw_pickle(path.read_bytes()[:9])
    with pytest.raises(CheckpointError, match="pickle stream, not a zip archive"):
        shardflow.load(path)


def test_is_raw_pickle_on_heads():
    assert is_raw_pickle(b"\x80\x02\x8a\x0al\xfc\x9cF\xf9")  # torch's legacy magic number
    assert not is_raw_pickle(b"\x80\x01\x00\x00\x00\x00\x00\x00{")  # safetensors, 384-byte header
    assert not is_raw_pickle(b"PK\x03\x04\x00\x00\x00\x00\x00")
