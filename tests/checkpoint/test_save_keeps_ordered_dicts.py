"""``torch.load`` gives back an ``OrderedDict`` where one was saved (every ``state_dict()``);
shardflow's safetensors structure turned them into plain dicts (session 29)."""

import io
from collections import OrderedDict

import torch

import shardflow as sf


def _round_trip(lib, obj, **load_kw):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_kw)


def test_ordered_dicts_load_as_ordered_dicts_as_torch():
    for lib in (torch, sf):
        m = lib.nn.Linear(2, 3)
        back = _round_trip(lib, {"model": m.state_dict(), "od": OrderedDict(b=1, a=2), "d": {"x": 1}})
        assert type(back["model"]) is OrderedDict and list(back["model"]) == ["weight", "bias"]
        assert type(back["od"]) is OrderedDict and list(back["od"].items()) == [("b", 1), ("a", 2)]
        assert type(back["d"]) is dict
        assert type(_round_trip(lib, m.state_dict(), map_location="cpu")) is OrderedDict
