"""A state dict's ``_metadata`` (each module's version) survives ``save`` / ``load``, as it
does through ``torch.save`` / ``torch.load`` (its pickle keeps the OrderedDict's
attributes). Loading code reads it: BatchNorm's version decides whether a missing
``num_batches_tracked`` is an error (version 2) or the module's own count is kept (no
version), so a saved-and-loaded checkpoint must answer as torch's does."""

import io

import pytest
import torch

import shardflow


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(3, 2, 1), lib.nn.BatchNorm2d(2))


def _round_trip(lib, obj, **load_kwargs):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_kwargs)


@pytest.mark.parametrize("map_location", [None, "cpu"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["bare", "DataParallel"])
def test_metadata_survives_save_and_load_like_torch(map_location, wrapped):
    seen = []
    for lib in (torch, shardflow):
        net = _net(lib)
        model = lib.nn.DataParallel(net) if wrapped else net
        ck = _round_trip(lib, {"net": model.state_dict(), "acc": 50.0, "epoch": 3}, map_location=map_location)
        seen.append(dict(ck["net"]._metadata))
    assert seen[0]["1" if not seen[0].get("module") else "module.1"] == {"version": 2}
    assert seen[1] == seen[0]


def test_pickled_checkpoint_keeps_metadata_too():
    """A checkpoint with an object safetensors cannot hold is pickled; the metadata stays."""
    import argparse

    for lib in (torch, shardflow):
        ck = _round_trip(lib, {"net": _net(lib).state_dict(), "args": argparse.Namespace(lr=0.1)}, weights_only=False)
        assert dict(ck["net"]._metadata)["1"] == {"version": 2}


def test_loaded_checkpoint_missing_the_count_is_an_error_as_in_torch():
    messages = []
    for lib in (torch, shardflow):
        sd = _round_trip(lib, _net(lib).state_dict())
        del sd["1.num_batches_tracked"]
        with pytest.raises(RuntimeError) as info:
            _net(lib).load_state_dict(sd)
        messages.append(str(info.value))
    assert 'Missing key(s) in state_dict: "1.num_batches_tracked"' in messages[0]
    assert messages[1] == messages[0]
