"""PyTorch model files run on shardflow with only their imports changed.

For each file in torch_models/: build the model with torch and with shardflow, check the
state_dict keys (names, order, shapes, dtypes: torch's), copy torch's weights, then check
logits, loss, every parameter gradient, and ten optimizer steps (float32, rtol 1e-4 / atol
1e-5).
"""

from pathlib import Path

import numpy as np
import pytest
import torch

import shardflow
from shardflow.testing.parity import load_torch_file

HERE = Path(__file__).parent / "torch_models"
RTOL, ATOL = 1e-4, 1e-5


def _batch(name, rng):
    if name == "gpt2":
        x = rng.integers(0, 64, (3, 16))
        y = rng.integers(0, 64, (3, 16))
        y[0, :3] = -1  # ignore_index
        return x, y
    if name == "resnet":
        return rng.standard_normal((4, 3, 16, 16)).astype(np.float32), rng.integers(0, 10, 4)
    return rng.standard_normal((2, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, 2)


def _build(name):
    th_mod = load_torch_file(HERE / f"{name}.py", use_shardflow=False)
    sf_mod = load_torch_file(HERE / f"{name}.py", use_shardflow=True)
    torch.manual_seed(0)
    shardflow.manual_seed(0)
    th_model, sf_model = th_mod.build(), sf_mod.build()
    _same_keys(sf_model, th_model, f"{name} as built")
    sf_model.load_state_dict({k: shardflow.tensor(v.detach().numpy()) for k, v in th_model.state_dict().items()})
    return th_mod, sf_mod, th_model, sf_model


def _same_keys(sf_model, th_model, what):
    """state_dict names in torch's order (a checkpoint written by one loads in the other),
    with the same shapes and dtypes; parameters and buffers listed as torch lists them."""
    sf_sd, th_sd = sf_model.state_dict(), th_model.state_dict()
    assert list(sf_sd) == list(th_sd), f"{what}: state_dict keys differ from torch's"
    for k, v in th_sd.items():
        assert tuple(sf_sd[k].shape) == tuple(v.shape), (what, k, sf_sd[k].shape, v.shape)
        assert str(sf_sd[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1], (what, k)
    assert [k for k, _ in sf_model.named_parameters()] == [k for k, _ in th_model.named_parameters()]
    assert [k for k, _ in sf_model.named_buffers()] == [k for k, _ in th_model.named_buffers()]


def _close(a, b, what):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("name", ["gpt2", "resnet", "mnist_cnn"])
def test_forward_loss_and_gradients_match_torch(name):
    th_mod, sf_mod, th_model, sf_model = _build(name)
    x, y = _batch(name, np.random.default_rng(0))
    th_loss = th_mod.loss_fn(th_model, torch.from_numpy(x), torch.from_numpy(y))
    sf_loss = sf_mod.loss_fn(sf_model, shardflow.from_numpy(x), shardflow.from_numpy(y))
    _close(sf_loss.item(), th_loss.item(), f"{name}: loss")
    th_loss.backward()
    sf_loss.backward()
    th_params = dict(th_model.named_parameters())
    for k, p in sf_model.named_parameters():
        _close(p.grad.numpy(), th_params[k].grad.numpy(), f"{name}: grad of {k}")
    if name == "gpt2":
        th_logits = th_model(torch.from_numpy(x))[0]
        sf_logits = sf_model(shardflow.from_numpy(x))[0]
        _close(sf_logits.detach().numpy(), th_logits.detach().numpy(), "gpt2: logits")


@pytest.mark.parametrize("name", ["gpt2", "resnet", "mnist_cnn"])
def test_ten_optimizer_steps_track_torch(name):
    th_mod, sf_mod, th_model, sf_model = _build(name)
    th_opt, sf_opt = th_mod.make_optimizer(th_model), sf_mod.make_optimizer(sf_model)
    rng = np.random.default_rng(1)
    for step in range(10):
        x, y = _batch(name, rng)
        th_opt.zero_grad(set_to_none=True)
        sf_opt.zero_grad(set_to_none=True)
        th_loss = th_mod.loss_fn(th_model, torch.from_numpy(x), torch.from_numpy(y))
        sf_loss = sf_mod.loss_fn(sf_model, shardflow.from_numpy(x), shardflow.from_numpy(y))
        th_loss.backward()
        sf_loss.backward()
        th_opt.step()
        sf_opt.step()
        _close(sf_loss.item(), th_loss.item(), f"{name}: loss at step {step}")
    _same_keys(sf_model, th_model, f"{name} after 10 steps")
    th_state = th_model.state_dict()
    for k, v in sf_model.state_dict().items():  # parameters and buffers (BatchNorm statistics)
        _close(v.numpy(), th_state[k].numpy(), f"{name}: {k} after 10 steps")
