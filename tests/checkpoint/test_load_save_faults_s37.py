"""Session 37's checkpoint fault probes, against torch 2.13.

* ``torch.load`` of a truncated / corrupted / empty file: torch raises ``RuntimeError``
  ("PytorchStreamReader failed reading zip archive ... your checkpoint file is corrupted")
  or, for an empty file, ``EOFError``. shardflow raised ``CheckpointError``, a ``ValueError``
  only (a resume's ``except RuntimeError`` missed it), and a ``torch.save`` zip whose
  ``data.pkl`` was damaged raised zipfile's bare ``BadZipFile``. Now
  ``CorruptCheckpointError`` (a ``CheckpointError`` and a ``RuntimeError``; an empty file
  also an ``EOFError``) naming the file and the fix.
* ``torch.save`` to a path whose folder does not exist: torch's ``RuntimeError`` "Parent
  directory X does not exist." (the folders were created silently); to a folder: a
  ``RuntimeError`` (it was an ``IsADirectoryError`` naming the temp file).
"""

import io
import os

import numpy as np
import pytest

import shardflow
from shardflow.checkpoint.safetensors import CheckpointError


def _state():
    return {"w": shardflow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
            "b": shardflow.zeros(3)}


def _torch_file(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "b": torch.zeros(3)}, path)
    return torch, path.read_bytes()


@pytest.mark.parametrize("cut", [0.5, 10])
def test_a_truncated_file_raises_a_runtime_error_as_torch(tmp_path, cut):
    path = tmp_path / "model.pt"
    shardflow.save(_state(), path)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * cut) if cut < 1 else cut])
    with pytest.raises(RuntimeError, match=r"model\.pt is truncated") as ours:
        shardflow.load(path)
    assert isinstance(ours.value, CheckpointError)  # shardflow's own type still catches it


def test_a_truncated_or_damaged_torch_zip_raises_a_runtime_error_as_torch(tmp_path):
    torch, data = _torch_file(tmp_path)
    half = data[: len(data) // 2]
    with pytest.raises(RuntimeError, match="PytorchStreamReader failed reading zip archive"):
        torch.load(io.BytesIO(half))
    with pytest.raises(RuntimeError, match=r"is not a readable zip archive .*truncated or "
                                           r"corrupted .*use an earlier checkpoint"):
        shardflow.load(io.BytesIO(half))
    at = data.index(b"data.pkl") + 40  # inside data.pkl's bytes: its CRC-32 no longer holds
    damaged = data[:at] + bytes(b ^ 0x5A for b in data[at: at + 16]) + data[at + 16:]
    with pytest.raises(RuntimeError, match=r"is corrupted: its record '.*data\.pkl' cannot be "
                                           r"read \(Bad CRC-32"):  # was zipfile.BadZipFile
        shardflow.load(io.BytesIO(damaged))


def test_an_empty_file_raises_eof_error_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "empty.pt"
    path.write_bytes(b"")
    with pytest.raises(EOFError):
        torch.load(path)
    with pytest.raises(EOFError, match=r"empty\.pt is truncated or not a safetensors file "
                                       r"\(0 bytes\)") as ours:
        shardflow.load(path)
    assert isinstance(ours.value, RuntimeError | CheckpointError)


def test_save_into_a_folder_that_does_not_exist_raises_torchs_runtime_error(tmp_path):
    torch = pytest.importorskip("torch")
    target = tmp_path / "no" / "such" / "model.pt"
    with pytest.raises(RuntimeError) as theirs:
        torch.save({"a": torch.ones(1)}, str(target))
    with pytest.raises(RuntimeError) as ours:
        shardflow.save(_state(), str(target))
    assert str(ours.value).startswith(str(theirs.value) + " (save(obj, "), ours.value
    assert f"os.makedirs({str(target.parent)!r}, exist_ok=True)" in str(ours.value)
    assert not (tmp_path / "no").exists()  # nothing was created
    with pytest.raises(RuntimeError, match=r"Parent directory .* does not exist"):
        shardflow.save(shardflow.nn.Linear(2, 2), target)  # the pickled path too


def test_save_to_a_folder_raises_a_runtime_error_naming_it(tmp_path):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Is a directory"):
        torch.save({"a": torch.ones(1)}, str(tmp_path))
    with pytest.raises(RuntimeError, match=r"Is a directory .* is a folder; pass a file path "
                                           r"inside it, e\.g\. '.*model\.pt'"):
        shardflow.save(_state(), tmp_path)
    assert os.listdir(tmp_path) == []  # no temp file left behind
