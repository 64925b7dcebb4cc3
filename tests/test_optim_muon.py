"""``torch.optim.Muon`` (torch 2.13) against torch: parameters over several steps (its
bfloat16 Newton-Schulz reproduced), state_dict, and the argument errors."""

import copy

import numpy as np
import pytest
import torch

import shardflow
from shardflow import optim

SHAPES = [(6, 4), (4, 6), (5, 5)]  # tall (transposed inside), wide, square


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.02, nesterov=False, weight_decay=0.0),
                                dict(lr=0.01, momentum=0.8, adjust_lr_fn="match_rms_adamw"),
                                dict(lr=0.01, ns_steps=3, adjust_lr_fn="original", eps=1e-5)],
                         ids=["defaults", "plain-momentum", "match_rms_adamw", "ns_steps3"])
def test_muon_matches_torch_over_steps(kw):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ps = [shardflow.tensor(a, requires_grad=True) for a in arrs]
    pt = [torch.tensor(a, requires_grad=True) for a in arrs]
    o_sf, o_th = optim.Muon(ps, **kw), torch.optim.Muon(pt, **kw)
    for i in range(6):
        for a, b in zip(ps, pt):
            g = rng.standard_normal(tuple(b.shape)).astype(np.float32)
            a.grad, b.grad = shardflow.tensor(g), torch.tensor(g)
        o_sf.step()
        o_th.step()
        for a, b in zip(ps, pt):
            # bfloat16 intermediates: an occasional last-bit difference, scaled by lr
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {i}")
    sd, tsd = o_sf.state_dict(), o_th.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    for k in tsd["state"]:
        assert list(sd["state"][k]) == list(tsd["state"][k]) == ["momentum_buffer"]
        np.testing.assert_allclose(sd["state"][k]["momentum_buffer"].numpy(),
                                   tsd["state"][k]["momentum_buffer"].numpy(), rtol=1e-6, atol=1e-7)
    clones = [shardflow.tensor(p.numpy().copy(), requires_grad=True) for p in ps]
    o2 = optim.Muon(clones, **kw)
    o2.load_state_dict(copy.deepcopy(sd))
    for p, c in zip(ps, clones):
        g = rng.standard_normal(tuple(p.shape)).astype(np.float32)
        p.grad, c.grad = shardflow.tensor(g), shardflow.tensor(g.copy())
    o_sf.step()
    o2.step()
    for p, c in zip(ps, clones):
        np.testing.assert_array_equal(p.numpy(), c.numpy())


@pytest.mark.parametrize("make,match", [
    (lambda p: optim.Muon(p, lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
    (lambda p: optim.Muon(p, momentum=-0.1), "momentum should be >= 0 but is: -0.1"),
    (lambda p: optim.Muon(p, weight_decay=-1), "weight decay should be >= 0 but is: -1"),
    (lambda p: optim.Muon(p, adjust_lr_fn="rms"), "Adjust learning rate function rms is not supported"),
])
def test_bad_arguments_raise_like_torch(make, match):
    with pytest.raises(ValueError, match=match):
        make([shardflow.tensor(np.ones((2, 2), np.float32), requires_grad=True)])


def test_non_matrix_parameters_are_refused_like_torch():
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        torch.optim.Muon([torch.ones(3, requires_grad=True)])
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters.*AdamW"):
        optim.Muon([shardflow.tensor(np.ones(3, np.float32), requires_grad=True)])
