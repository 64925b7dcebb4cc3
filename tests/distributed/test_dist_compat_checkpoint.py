"""torch.distributed.checkpoint's other names, one process, against torch 2.13: async_save
(a staged copy, a Future), the deprecated save_state_dict / load_state_dict, planners,
read_metadata's Metadata, CheckpointException, FileSystemWriter(overwrite=False),
load_sharded_optimizer_state_dict and the Hugging Face storages. Two ranks:
tests/distributed/test_dist_compat.py."""

import json
import os

import numpy as np
import pytest

import shardflow as sf
import shardflow.distributed.checkpoint as dcp

torch = pytest.importorskip("torch")
import torch.distributed.checkpoint as tdcp  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")

NAMES = ["DefaultSavePlanner", "DefaultLoadPlanner", "SavePlanner", "LoadPlanner", "SavePlan",
         "LoadPlan", "ReadItem", "WriteItem", "StorageReader", "StorageWriter", "Metadata",
         "TensorStorageMetadata", "BytesStorageMetadata", "ChunkStorageMetadata",
         "CheckpointException", "load_state_dict", "save_state_dict", "async_save",
         "load_sharded_optimizer_state_dict", "HuggingFaceStorageWriter",
         "HuggingFaceStorageReader"]


def test_names_and_paths():
    for n in NAMES:
        assert hasattr(tdcp, n) and hasattr(dcp, n), n
    from shardflow.distributed.checkpoint.api import CheckpointException
    from shardflow.distributed.checkpoint.default_planner import DefaultSavePlanner
    from shardflow.distributed.checkpoint.metadata import Metadata

    assert DefaultSavePlanner is dcp.DefaultSavePlanner and Metadata is dcp.Metadata
    assert CheckpointException is dcp.CheckpointException
    assert isinstance(dcp.FileSystemWriter("x"), dcp.StorageWriter)
    assert isinstance(dcp.FileSystemReader("x"), dcp.StorageReader)
    assert issubclass(dcp.DefaultLoadPlanner, dcp.LoadPlanner)


def _state(scale=1.0):
    return {"model": {"w": sf.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3) * scale),
                      "b": sf.tensor(np.full(3, scale, np.float32))}, "step": int(scale)}


def test_async_save_stages_a_copy_and_deprecated_aliases(tmp_path):
    sd = _state(2.0)
    fut = dcp.async_save(sd, checkpoint_id=tmp_path / "c", no_dist=True,
                         planner=dcp.DefaultSavePlanner())
    sd["model"]["w"].add_(100.0)  # after staging: not in the checkpoint
    assert fut.result(timeout=30)["format"] == "shardflow.dcp/1" and fut.done()
    target = _state(0.0)
    with pytest.warns(FutureWarning, match="`load_state_dict` is deprecated"):
        dcp.load_state_dict(target, storage_reader=dcp.FileSystemReader(tmp_path / "c"),
                            no_dist=True)
    np.testing.assert_array_equal(target["model"]["w"].numpy(), _state(2.0)["model"]["w"].numpy())
    assert target["step"] == 2
    with pytest.warns(FutureWarning, match="`save_state_dict` is deprecated"):
        dcp.save_state_dict(_state(3.0), dcp.FileSystemWriter(tmp_path / "d"), no_dist=True)
    bad = dcp.async_save({"x": object()}, checkpoint_id=tmp_path / "e", no_dist=True)
    with pytest.raises(dcp.CheckpointException, match="object"):
        bad.result(timeout=30)


def test_planners(tmp_path):
    class MyPlanner(dcp.DefaultSavePlanner):
        pass

    with pytest.raises(NotImplementedError, match="only DefaultSavePlanner"):
        dcp.save(_state(), checkpoint_id=tmp_path / "p", planner=MyPlanner(), no_dist=True)
    assert not os.path.exists(tmp_path / "p")  # refused before anything was written
    dcp.save(_state(5.0), checkpoint_id=tmp_path / "p", no_dist=True)
    target = {"model": {"w": sf.zeros(2, 3), "extra": sf.ones(2)}, "step": 0}
    with pytest.raises(dcp.CheckpointException, match="'model.extra'") as info:
        dcp.load(target, checkpoint_id=tmp_path / "p", no_dist=True)
    assert list(info.value.failures) == [0] and isinstance(info.value, dcp.CheckpointError)
    assert target["step"] == 0  # nothing loaded
    dcp.load(target, checkpoint_id=tmp_path / "p", no_dist=True,
             planner=dcp.DefaultLoadPlanner(allow_partial_load=True))
    assert target["step"] == 5 and target["model"]["extra"].numpy().tolist() == [1.0, 1.0]
    np.testing.assert_array_equal(target["model"]["w"].numpy(), _state(5.0)["model"]["w"].numpy())


def test_read_metadata_matches_torch(tmp_path):
    dcp.save(_state(), checkpoint_id=tmp_path / "s", no_dist=True)
    tsd = {"model": {"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(3)}, "step": 1}
    tdcp.save(tsd, checkpoint_id=tmp_path / "t", no_dist=True)
    mine = dcp.FileSystemReader(tmp_path / "s").read_metadata().state_dict_metadata
    theirs = tdcp.FileSystemReader(tmp_path / "t").read_metadata().state_dict_metadata
    assert sorted(mine) == sorted(theirs) == ["model.b", "model.w", "step"]
    assert type(mine["step"]).__name__ == type(theirs["step"]).__name__ == "BytesStorageMetadata"
    for k in ("model.w", "model.b"):
        assert list(mine[k].size) == list(theirs[k].size)
        assert str(mine[k].properties.dtype).split(".")[1] == str(theirs[k].properties.dtype).split(".")[1]
        assert [(list(c.offsets), list(c.sizes)) for c in mine[k].chunks] == \
            [(list(c.offsets), list(c.sizes)) for c in theirs[k].chunks]


def test_overwrite_false(tmp_path):
    dcp.save(_state(), storage_writer=dcp.FileSystemWriter(tmp_path), no_dist=True)
    with pytest.raises(dcp.CheckpointException, match="overwrite is False"):
        dcp.save(_state(), storage_writer=dcp.FileSystemWriter(tmp_path, overwrite=False),
                 no_dist=True)


def test_load_sharded_optimizer_state_dict_one_process(tmp_path):
    sf.manual_seed(0)
    model = sf.nn.Linear(3, 2)
    opt = sf.optim.Adam(model.parameters(), lr=0.1)
    model(sf.randn(4, 3)).sum().backward()
    opt.step()
    model_sd, optim_sd = dcp.get_state_dict(model, opt)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=tmp_path, no_dist=True)
    got = dcp.load_sharded_optimizer_state_dict(model_sd, "optim", dcp.FileSystemReader(tmp_path))
    assert list(got) == ["optim"]
    for fqn, st in optim_sd["state"].items():
        for k, v in st.items():
            np.testing.assert_array_equal(np.asarray(got["optim"]["state"][fqn][k]),
                                          np.asarray(v))
    assert got["optim"]["param_groups"] == optim_sd["param_groups"]
    with pytest.raises(KeyError, match="nothing under 'opt'"):
        dcp.load_sharded_optimizer_state_dict(model_sd, "opt", dcp.FileSystemReader(tmp_path))


def test_hugging_face_storages_against_torch(tmp_path):
    from safetensors.numpy import load_file

    w = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    mapping = {"a.weight": 1, "b": 2, "c": 2}
    dcp.save({"a": {"weight": sf.tensor(w)}, "b": sf.ones(4, dtype=sf.bfloat16),
              "c": sf.tensor(np.array([7], np.int64))},
             storage_writer=dcp.HuggingFaceStorageWriter(tmp_path / "s", mapping), no_dist=True)
    tdcp.save({"a.weight": torch.tensor(w), "b": torch.ones(4, dtype=torch.bfloat16),
               "c": torch.tensor([7])},
              storage_writer=tdcp.HuggingFaceStorageWriter(str(tmp_path / "t"), mapping),
              no_dist=True)
    assert sorted(os.listdir(tmp_path / "s")) == sorted(os.listdir(tmp_path / "t"))
    index = "model.safetensors.index.json"
    assert json.loads((tmp_path / "s" / index).read_text()) == \
        json.loads((tmp_path / "t" / index).read_text())
    files = load_file(str(tmp_path / "s" / "model-00001-of-00002.safetensors"))
    np.testing.assert_array_equal(files["a.weight"], w)
    # torch reads ours; we read torch's
    tgt = {"a.weight": torch.zeros(2, 3), "b": torch.zeros(4, dtype=torch.bfloat16),
           "c": torch.zeros(1, dtype=torch.int64)}
    tdcp.load(tgt, storage_reader=tdcp.HuggingFaceStorageReader(str(tmp_path / "s")), no_dist=True)
    assert tgt["c"].tolist() == [7] and tgt["b"].float().tolist() == [1.0] * 4
    mine = {"a": {"weight": sf.zeros(2, 3)}, "b": sf.zeros(4), "c": sf.zeros(1)}
    dcp.load(mine, storage_reader=dcp.HuggingFaceStorageReader(tmp_path / "t"), no_dist=True)
    np.testing.assert_array_equal(mine["a"]["weight"].numpy(), w)
    assert mine["b"].numpy().tolist() == [1.0] * 4 and mine["c"].numpy().tolist() == [7.0]
    md = dcp.HuggingFaceStorageReader(tmp_path / "t").read_metadata().state_dict_metadata
    assert list(md["a.weight"].size) == [2, 3]
    with pytest.raises(ValueError, match="tensors only"):
        dcp.save({"step": 3}, storage_writer=dcp.HuggingFaceStorageWriter(tmp_path / "u"),
                 no_dist=True)
    with pytest.raises(dcp.CheckpointException, match="shape"):
        dcp.load({"b": sf.zeros(5)}, storage_reader=dcp.HuggingFaceStorageReader(tmp_path / "t"),
                 no_dist=True)
