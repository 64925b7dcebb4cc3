"""grad_fn names of squeeze / unsqueeze / copying reshape / basic indexing, against torch 2.13.

Found by the PPO program (``programs/rl_ad/ppo.py``): a ``Categorical``'s ``log_prob``
(``gather(...).squeeze(-1)``) printed ``grad_fn=<ViewBackward0>`` where torch prints
``<SqueezeBackward1>``; every reshape-like op was ``ViewBackward0`` and every basic index
without a partial slice ``SelectBackward0`` (``x[None]`` is torch's ``UnsqueezeBackward0``,
``x[...]`` its ``AliasBackward0``). The names also hold after backward."""

import pytest
import torch

import shardflow

CASES = {
    "squeeze()": lambda lib, x: x.squeeze(),
    "squeeze(1)": lambda lib, x: x.squeeze(1),
    "squeeze(-1) no size-1": lambda lib, x: x.squeeze(0),
    "squeeze((1,))": lambda lib, x: x.squeeze((1,)),
    "torch.squeeze(x, dim=1)": lambda lib, x: lib.squeeze(x, dim=1),
    "unsqueeze(0)": lambda lib, x: x.unsqueeze(0),
    "view(-1)": lambda lib, x: x.view(-1),
    "reshape (a view)": lambda lib, x: x.reshape(6),
    "reshape (a copy)": lambda lib, x: x.transpose(0, 2).reshape(6),
    "flatten()": lambda lib, x: x.flatten(),
    "x[None]": lambda lib, x: x[None],
    "x[:, None]": lambda lib, x: x[:, None],
    "x[..., None]": lambda lib, x: x[..., None],
    "x[None, 0]": lambda lib, x: x[None, 0],
    "x[0, None]": lambda lib, x: x[0, None],
    "x[0]": lambda lib, x: x[0],
    "x[:, 0]": lambda lib, x: x[:, 0],
    "x[0, :]": lambda lib, x: x[0, :],
    "x[:]": lambda lib, x: x[:],
    "x[0:3]": lambda lib, x: x[0:3],
    "x[:, :]": lambda lib, x: x[:, :],
    "x[...]": lambda lib, x: x[...],
    "x[1:, None]": lambda lib, x: x[1:, None],
    "x[None, :, :, 0:1]": lambda lib, x: x[None, :, :, 0:1],
    "x[[0, 2]]": lambda lib, x: x[[0, 2]],
    "Categorical.log_prob": lambda lib, x: lib.distributions.Categorical(logits=x.reshape(3, 2)).log_prob(lib.tensor([0, 1, 1])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_node_names_like_torch(name):
    names = []
    for lib in (shardflow, torch):
        x = lib.arange(6.0).reshape(3, 2, 1).requires_grad_()
        y = CASES[name](lib, x)
        before = y.grad_fn.name()
        y.sum().backward()
        names.append((before, y.grad_fn.name(), repr(y).split("grad_fn=")[-1]))
    assert names[0] == names[1], name


def test_gradients_unchanged():
    grads = []
    for lib in (shardflow, torch):
        x = lib.arange(6.0).reshape(3, 2, 1).requires_grad_()
        (x.squeeze() * 2).sum().backward()
        (x[None, :, :, 0:1] ** 2).sum().backward()
        (x.transpose(0, 2).reshape(6) * lib.arange(6.0)).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]
