"""``Optimizer.load_state_dict`` of a dict without its keys raises torch's KeyError, in
torch's order (``param_groups`` first, then the groups' checks, then ``state``); shardflow
raised a ValueError for every case (kept as a base class, so both ``except`` clauses work)."""

import pytest
import torch

import shardflow as sf


def _outcome(lib, sd):
    p = lib.nn.Parameter(lib.ones(2))
    try:
        lib.optim.SGD([p], lr=0.1).load_state_dict(sd)
    except (KeyError, ValueError) as e:
        return KeyError if isinstance(e, KeyError) else ValueError, e
    return None, None


@pytest.mark.parametrize("sd", [{"state": {}}, {}, {"param_groups": []},
                                {"param_groups": [{"lr": 0.1, "params": [0]}]}])
def test_missing_keys_like_torch(sd):
    th_type, th_err = _outcome(torch, sd)
    sf_type, sf_err = _outcome(sf, sd)
    assert sf_type is th_type, (sf_err, th_err)
    if th_type is KeyError:
        assert isinstance(sf_err, ValueError)  # shardflow's earlier type still catches it
        assert str(sf_err).startswith(str(th_err))  # "'param_groups'" / "'state'", then the fix
        assert "optimizer.state_dict()" in str(sf_err)
