"""The error ``load`` raises when ``weights_only=True`` refuses a pickle is a
``pickle.UnpicklingError``, as PyTorch's: programs written for PyTorch >= 2.6 catch it to
retry with ``weights_only=False`` (``except pickle.UnpicklingError:``). Each case is run on
torch and on shardflow from the same file."""

import io
import pickle
import zipfile

import numpy as np
import pytest
import torch

import shardflow as sf
from shardflow.checkpoint import CheckpointError
from shardflow.checkpoint.pytorch_file import WeightsOnlyUnpicklingError


def _torch_file(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _with_pickle(data: bytes, payload: bytes) -> bytes:
    """A torch.save archive (``data``) with its data.pkl replaced by ``payload``."""
    src, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            z.writestr(info.filename, payload if info.filename.endswith("data.pkl") else src.read(info.filename))
    return out.getvalue()


_CASES = {
    # a whole model (torch.save(model)): the model class is off the allow-list
    "whole_module": lambda: _torch_file(torch.nn.Linear(2, 3)),
    # a NumPy array pickled by torch.save (time_sequence_prediction's traindata.pt)
    "numpy_array": lambda: _torch_file(np.zeros(3)),
    # GLOBAL + REDUCE of builtins.eval
    "eval": lambda: _with_pickle(_torch_file({}), b"\x80\x02cbuiltins\neval\nX\x05\x00\x00\x001 + 1\x85R."),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_weights_only_refusal_is_an_unpickling_error_as_in_torch(case):
    data = _CASES[case]()
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError, match="weights_only=True.*weights_only=False") as caught:
        sf.load(io.BytesIO(data))
    # still the CheckpointError shardflow code catches
    assert isinstance(caught.value, CheckpointError) and type(caught.value) is WeightsOnlyUnpicklingError


def test_build_on_a_class_is_an_unpickling_error():
    """BUILD that would set attributes of collections.OrderedDict itself: refused with the
    same type (torch refuses it too, earlier: it does not allow the bare class's BUILD)."""
    payload = b"\x80\x02ccollections\nOrderedDict\n}X\x01\x00\x00\x00aK\x01sb."
    data = _with_pickle(_torch_file({}), payload)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError, match="sets the state of a type"):
        sf.load(io.BytesIO(data))


def test_the_pytorch_retry_idiom_loads_the_whole_module():
    """`try: torch.load(f) except pickle.UnpicklingError: torch.load(f, weights_only=False)`,
    on a whole module torch saved: both frameworks end with the module."""
    data = _CASES["whole_module"]()
    results = []
    for lib in (torch, sf):
        try:
            model = lib.load(io.BytesIO(data))
        except pickle.UnpicklingError:
            model = lib.load(io.BytesIO(data), weights_only=False)
        results.append(model)
    th_model, sf_model = results
    assert type(sf_model).__name__ == "Linear" and isinstance(sf_model, sf.nn.Linear)
    np.testing.assert_array_equal(sf_model.weight.detach().numpy(), th_model.weight.detach().numpy())


def test_a_truncated_pickle_stays_a_checkpoint_error():
    """Not a refusal: torch raises what its unpickler hit (here an IndexError reading past
    the end); shardflow a CheckpointError naming what it hit (a known difference), and in
    neither an UnpicklingError."""
    good = _torch_file({"a": 1})
    data = _with_pickle(good, zipfile.ZipFile(io.BytesIO(good)).read(
        next(n for n in zipfile.ZipFile(io.BytesIO(good)).namelist() if n.endswith("data.pkl")))[:-3])
    with pytest.raises(Exception) as torch_caught:
        torch.load(io.BytesIO(data))
    assert not isinstance(torch_caught.value, pickle.UnpicklingError)
    with pytest.raises(CheckpointError, match="cannot read its pickle") as caught:
        sf.load(io.BytesIO(data))
    assert not isinstance(caught.value, pickle.UnpicklingError)
