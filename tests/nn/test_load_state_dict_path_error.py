"""``load_state_dict(PATH)`` (the mistake the saving-and-loading tutorial warns about) raises
torch's TypeError, torch's words first (``got <class 'str'>.``; shardflow wrote ``got str.``),
then how to fix it."""

import pytest
import torch

import shardflow


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_path_instead_of_state_dict(lib):
    with pytest.raises(TypeError, match=r"^Expected state_dict to be dict-like, got <class 'str'>\.") as info:
        lib.nn.Linear(2, 2).load_state_dict("model.pt")
    if lib is shardflow:
        assert "load_state_dict(torch.load(PATH))" in str(info.value)
    with pytest.raises(TypeError, match=r"^Expected state_dict to be dict-like, got <class 'list'>\.$"):
        lib.nn.Linear(2, 2).load_state_dict([])
