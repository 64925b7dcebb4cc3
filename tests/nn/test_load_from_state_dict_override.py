"""torch's per-module loading protocol, against torch: ``state_dict()._metadata`` holds each
module's ``{"version": _version}`` (BatchNorm's is 2), and ``load_state_dict`` calls a
subclass's ``_load_from_state_dict`` override with its prefix and metadata entry, on a state
dict it may edit, raising what it appends to ``error_msgs``. shardflow ignored overrides:
torchvision's MNASNet (which checks the checkpoint's version) and FrozenBatchNorm2d (which
drops ``num_batches_tracked``) loaded differently from torch."""

from collections import OrderedDict

import pytest
import torch

import shardflow


def _frozen_bn(lib):
    class FrozenBN(lib.nn.Module):
        """torchvision's FrozenBatchNorm2d loading step: buffers only, the BatchNorm
        checkpoint's num_batches_tracked dropped."""

        def __init__(self, n):
            super().__init__()
            self.register_buffer("weight", lib.ones(n))
            self.register_buffer("running_mean", lib.zeros(n))
            self.seen = []

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                                  unexpected_keys, error_msgs):
            self.seen.append((prefix, dict(local_metadata)))
            state_dict.pop(prefix + "num_batches_tracked", None)
            state_dict.pop(prefix + "bias", None)
            state_dict.pop(prefix + "running_var", None)
            if local_metadata.get("version") == 99:
                error_msgs.append("version 99 is not supported")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                          unexpected_keys, error_msgs)

    return FrozenBN


@pytest.mark.parametrize("lib", [torch, shardflow], ids=["torch", "shardflow"])
def test_override_is_called_and_may_edit_the_state_dict(lib):
    source = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 1), lib.nn.BatchNorm2d(4))
    with lib.no_grad():
        source[1].running_mean.fill_(0.5)
    target = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 1), _frozen_bn(lib)(4))
    sd = source.state_dict()
    assert str(target.load_state_dict(sd)) == "<All keys matched successfully>"  # strict
    assert target[1].seen == [("1.", {"version": 2})]
    assert target[1].running_mean.tolist() == [0.5] * 4
    assert "1.num_batches_tracked" in sd  # the caller's dict is not edited
    target[1].seen.clear()
    target.load_state_dict(dict(sd))  # a plain dict has no metadata
    assert target[1].seen == [("1.", {})]
    sd._metadata["1"] = {"version": 99}
    with pytest.raises(RuntimeError, match="version 99 is not supported"):
        target.load_state_dict(sd)


def _metadata(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(OrderedDict(conv=lib.nn.Conv2d(3, 4, 3), bn=lib.nn.BatchNorm2d(4),
                                          head=lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(4, 2)),
                                          ln=lib.nn.LayerNorm(2)))
    return dict(model.state_dict()._metadata)


def test_state_dict_metadata_as_torch():
    assert _metadata(shardflow) == _metadata(torch)
