"""``shardflow.save``'s pickle arguments are honoured or refused, never dropped:
``pickle_protocol`` sets the protocol of a pickled file's ``data.pkl`` (torch.load reads it);
``pickle_module`` other than the standard pickle raises before anything is written."""

import io
import pickle
import types
import zipfile

import pytest
import torch

import shardflow as sf


class Box:  # an object of the program's own class: saved as a pickle, as torch.save does
    def __init__(self, t):
        self.t = t


def _data_pkl(raw: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))


@pytest.mark.parametrize("protocol", [2, 4, pickle.HIGHEST_PROTOCOL])
def test_pickle_protocol_is_the_data_pkl_protocol_as_torch(protocol):
    ours, theirs = io.BytesIO(), io.BytesIO()
    sf.save(Box(sf.arange(3.0)), ours, pickle_protocol=protocol)
    torch.save(Box(torch.arange(3.0)), theirs, pickle_protocol=protocol)
    assert _data_pkl(ours.getvalue())[:2] == _data_pkl(theirs.getvalue())[:2] == bytes([0x80, protocol])
    ours.seek(0)
    back = torch.load(ours, weights_only=False)  # torch reads what shardflow wrote
    assert back.t.tolist() == [0.0, 1.0, 2.0]


def test_pickle_protocol_default_is_two():
    ours = io.BytesIO()
    sf.save(Box(sf.ones(1)), ours)
    assert _data_pkl(ours.getvalue())[:2] == b"\x80\x02"


def test_state_dict_with_a_protocol_round_trips():
    buf = io.BytesIO()
    sf.save({"w": sf.ones(2)}, buf, pickle_protocol=4)  # safetensors: no pickle, protocol checked only
    buf.seek(0)
    assert sf.load(buf)["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("bad", [1, 99, "4", 2.0, True])
def test_bad_protocol_refused_before_writing(tmp_path, bad):
    path = tmp_path / "x.pt"
    with pytest.raises(ValueError, match="pickle_protocol must be an int from 2"):
        sf.save({"w": sf.ones(2)}, path, pickle_protocol=bad)
    assert not path.exists()


def test_other_pickle_module_refused_before_writing(tmp_path):
    path = tmp_path / "x.pt"
    fake_dill = types.ModuleType("dill")
    with pytest.raises(ValueError, match="does not take a pickle_module .got dill.*drop pickle_module"):
        sf.save(Box(sf.ones(1)), path, pickle_module=fake_dill)
    assert not path.exists()
    sf.save(Box(sf.ones(1)), path, pickle_module=pickle)  # the standard one is what torch uses
    assert sf.load(path, weights_only=False).t.tolist() == [1.0]
