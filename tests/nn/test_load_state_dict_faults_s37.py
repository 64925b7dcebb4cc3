"""Session 37's ``load_state_dict`` probe, against torch 2.13: a value that is not a tensor
(a string, a list) raised a bare ``TypeError`` ("state_dict values must be Tensors ...") on
its own; torch lists it among the other errors in its ``RuntimeError`` ("While copying the
parameter named ..."). Now torch's type and words, every problem in one error, and (unlike
torch, which has copied the good entries by then) nothing changed."""

import collections

import numpy as np
import pytest

import shardflow


def _pair():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    ours = shardflow.nn.Sequential(shardflow.nn.Linear(3, 4), shardflow.nn.Linear(4, 2))
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return torch, theirs, ours


@pytest.mark.parametrize("bad", ["abc", [1.0, 2.0]])
def test_a_value_that_is_not_a_tensor_is_listed_in_torchs_runtime_error(bad):
    torch, theirs, ours = _pair()
    sd_t = collections.OrderedDict(theirs.state_dict())
    sd_t["0.weight"] = bad
    sd_t.pop("1.bias")
    sd_o = collections.OrderedDict(ours.state_dict())
    sd_o["0.weight"] = bad
    sd_o.pop("1.bias")
    sd_o["0.bias"] = shardflow.ones(4)  # a good entry: must not be copied either
    before = {k: v.numpy().copy() for k, v in ours.state_dict().items()}
    with pytest.raises(RuntimeError) as t_err:
        theirs.load_state_dict(sd_t)
    with pytest.raises(RuntimeError) as o_err:
        ours.load_state_dict(sd_o)
    t_lines = str(t_err.value).split("\n\t")
    o_lines = str(o_err.value).split("\n\t")
    assert o_lines[:2] == t_lines[:2]  # the heading and the missing key
    assert o_lines[2].startswith(t_lines[2] + " (a shardflow or torch Tensor"), o_lines[2]
    for k, v in ours.state_dict().items():  # nothing changed
        np.testing.assert_array_equal(v.numpy(), before[k])
