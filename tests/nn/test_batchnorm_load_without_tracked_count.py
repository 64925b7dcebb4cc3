"""BatchNorm's ``num_batches_tracked`` when a state dict lacks it, against torch.

torch's ``_NormBase._load_from_state_dict`` treats a state dict whose metadata gives the
module no version (a plain dict; an ``OrderedDict`` rebuilt to strip DataParallel's
``module.`` prefixes, as pytorch-cifar users do; a checkpoint from before 0.4.1) as version
1: the count is not reported missing and the module keeps its own. With version-2 metadata
the key is missing as any other.
"""

from collections import OrderedDict

import numpy as np
import pytest
import torch

import shardflow


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4), lib.nn.Linear(2, 2))


def _train_once(lib, net):
    net[1](lib.ones(2, 4, 3, 3))  # training mode: num_batches_tracked becomes 1


@pytest.mark.parametrize("rebuild", ["dict", "strip_module_prefix"])
def test_state_dict_without_metadata_may_lack_the_count(rebuild):
    results = []
    for lib in (torch, shardflow):
        net = _net(lib)
        _train_once(lib, net)
        source = lib.nn.DataParallel(_net(lib)).state_dict()
        if rebuild == "dict":
            sd = {k[len("module."):]: v for k, v in source.items() if "num_batches_tracked" not in k}
        else:
            sd = OrderedDict((k[7:], v) for k, v in source.items() if not k.endswith("num_batches_tracked"))
        keys = net.load_state_dict(sd)
        results.append((keys.missing_keys, keys.unexpected_keys, int(net[1].num_batches_tracked),
                        np.asarray(net[1].running_var.detach().numpy()).tolist(), str(net[1].num_batches_tracked.dtype)))
    th, sf = results
    assert th[:3] == ([], [], 1)  # torch keeps the module's own count
    assert sf[:3] == th[:3] and sf[3] == th[3]
    assert sf[4].replace("shardflow", "torch") == th[4]


def test_version_two_metadata_still_reports_the_key_missing():
    messages = []
    for lib in (torch, shardflow):
        net = _net(lib)
        sd = net.state_dict()  # carries _metadata with BatchNorm's version 2
        del sd["1.num_batches_tracked"]
        with pytest.raises(RuntimeError) as info:
            net.load_state_dict(sd)
        messages.append(str(info.value))
        assert net.load_state_dict(sd, strict=False).missing_keys == ["1.num_batches_tracked"]
    assert messages[1] == messages[0]
    assert 'Missing key(s) in state_dict: "1.num_batches_tracked"' in messages[1]


def test_prefixed_keys_report_the_same_missing_and_unexpected_keys_as_torch():
    """Loading DataParallel's ``module.`` keys into the bare model: torch's message omits
    ``1.num_batches_tracked`` from the missing keys (the metadata names ``module.1``, so
    ``1`` has no version): shardflow's message is the same text."""
    messages = []
    for lib in (torch, shardflow):
        net = _net(lib)
        with pytest.raises(RuntimeError) as info:
            net.load_state_dict(lib.nn.DataParallel(_net(lib)).state_dict())
        messages.append(str(info.value))
    assert "1.num_batches_tracked\", \"2" not in messages[0]
    assert messages[1] == messages[0]


def test_without_running_stats_nothing_is_added():
    for lib in (torch, shardflow):
        bn = lib.nn.BatchNorm1d(3, track_running_stats=False)
        assert bn.load_state_dict({"weight": lib.ones(3), "bias": lib.zeros(3)}).missing_keys == []
        assert "num_batches_tracked" not in bn.state_dict()
