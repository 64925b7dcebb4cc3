"""Checkpoint hardening: header checksum, stale temp files of killed saves, skip reporting."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import shardflow as sf
from shardflow import checkpoint as ck


def test_bit_flip_in_metadata_is_refused(tmp_path):
    p = tmp_path / "ckpt_0000004.safetensors"
    sf.save({"step": 4, "w": sf.ones(3)}, p)
    data = bytearray(p.read_bytes())
    key = b'step\\",4]'  # inside the JSON-in-JSON structure string: [\"step\",4]
    at = data.index(key) + len(key) - 2
    data[at] ^= 0x01  # '4' -> '5': still valid JSON, a different step
    bad = tmp_path / "flipped.safetensors"
    bad.write_bytes(bytes(data))
    with pytest.raises(ck.CheckpointError, match=r"flipped.safetensors is corrupt: CRC-32 of its header"):
        sf.load(bad)
    assert sf.load(p)["step"] == 4  # the intact file still loads


def test_bit_flip_in_the_checksum_field_itself_is_refused(tmp_path):
    p = tmp_path / "c.safetensors"
    sf.save({"step": 4}, p)
    data = bytearray(p.read_bytes())
    at = data.index(b'"shardflow.header_crc32":"') + len(b'"shardflow.header_crc32":"')
    data[at + 9] ^= 0x01
    p.write_bytes(bytes(data))
    with pytest.raises(ck.CheckpointError, match="is corrupt: CRC-32 of its header"):
        sf.load(p)


def test_files_of_other_writers_still_load(tmp_path):
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"w": np.arange(3, dtype=np.float32)}, str(tmp_path / "theirs.safetensors"),
              metadata={"format": "pt"})
    assert sf.load(tmp_path / "theirs.safetensors")["w"].tolist() == [0.0, 1.0, 2.0]


_WRITER = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import shardflow as sf
    def stuck_fsync(fd):
        print("writing", flush=True)
        time.sleep(120)
    os.fsync = stuck_fsync
    sf.save({"w": sf.tensor(np.zeros(50_000, np.float32)), "step": 2}, sys.argv[1])
""")


def _start_writer(path):
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "writing"
    return proc


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_stale_temp_files_of_killed_saves_are_cleaned_and_live_ones_kept(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    sf.save({"step": 1}, folder / "ckpt_0000001.safetensors")
    dead = _start_writer(folder / "ckpt_0000002.safetensors")
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    dead_tmp = [f for f in os.listdir(folder) if f.endswith(".tmp")]
    assert len(dead_tmp) == 1  # what the kill left behind
    live = _start_writer(folder / "ckpt_0000003.safetensors")
    try:
        live_tmp = [f for f in os.listdir(folder) if f.endswith(".tmp") and f not in dead_tmp]
        assert len(live_tmp) == 1
        legacy = folder / ".ckpt_0000000.safetensors.ab12cd_9.tmp"  # earlier versions' name
        legacy.write_bytes(b"x" * 10)
        young_legacy = folder / ".ckpt_0000009.safetensors.zz12cd_9.tmp"
        young_legacy.write_bytes(b"y")
        not_ours = [folder / ".notes.tmp", folder / "data.tmp", folder / ".x.safetensors.tmp"]
        for f in not_ours:
            f.write_bytes(b"keep")
        elsewhere = tmp_path / ".ckpt_0000005.safetensors.sf1-abcdefgh.tmp"  # not in the folder
        elsewhere.write_bytes(b"keep")
        for f in [*dead_tmp, *live_tmp]:
            _age(folder / f, 3600)
        for f in (legacy, elsewhere, *not_ours):
            _age(f, 3600)

        removed = ck.clean_stale_temp_files(folder)

        assert sorted(os.path.basename(p) for p, _ in removed) == sorted([dead_tmp[0], legacy.name])
        assert sum(size for _, size in removed) > 200_000 + 10
        left = set(os.listdir(folder))
        assert live_tmp[0] in left  # a live writer's file is never touched ...
        assert young_legacy.name in left  # ... nor an unlocked one that may still be written
        assert {f.name for f in not_ours} <= left and elsewhere.exists()
        assert "ckpt_0000001.safetensors" in left
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()
    _age(folder / live_tmp[0], 3600)
    assert [os.path.basename(p) for p, _ in ck.clean_stale_temp_files(folder)] == live_tmp


def test_fresh_temp_file_is_left_alone(tmp_path):
    dead = _start_writer(tmp_path / "ckpt_0000002.safetensors")
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    assert ck.clean_stale_temp_files(tmp_path) == []  # younger than min_age_s
    assert len(ck.clean_stale_temp_files(tmp_path, min_age_s=0)) == 1
    assert os.listdir(tmp_path) == []


def test_skipped_corrupt_checkpoint_is_reported(tmp_path):
    sf.save({"step": 10}, tmp_path / "ckpt_0000010.safetensors")
    sf.save({"step": 20, "w": sf.ones(100)}, tmp_path / "ckpt_0000020.safetensors")
    newest = tmp_path / "ckpt_0000020.safetensors"
    newest.write_bytes(newest.read_bytes()[:-10])
    messages = []
    path = ck.find_latest(tmp_path, on_skip=messages.append)
    assert path == str(tmp_path / "ckpt_0000010.safetensors")
    assert len(messages) == 1
    msg = messages[0]
    assert f"skipped checkpoint {newest}: it is truncated" in msg
    assert f"using {path} instead" in msg
    with pytest.warns(ck.CheckpointSkippedWarning, match="ckpt_0000020.safetensors: it is truncated"):
        assert ck.find_latest(tmp_path) == path
    (tmp_path / "ckpt_0000010.safetensors").write_bytes(b"\x80\x04junk")
    with pytest.warns(ck.CheckpointSkippedWarning, match="no older checkpoint loads either"):
        assert ck.find_latest(tmp_path) is None
