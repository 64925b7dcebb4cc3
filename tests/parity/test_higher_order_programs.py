"""Programs that differentiate a gradient (``create_graph=True``), run with ``import
shardflow as torch`` and with torch 2.13 from the same initial weights and data (float64,
tiny shapes, two steps), compared loss by loss and parameter by parameter:

* WGAN-GP: the critic's gradient penalty ``((grad.norm(2, dim=1) - 1) ** 2).mean()`` of a
  small conv critic (conv2d, leaky_relu, instance norm, linear) at interpolated samples,
  then a critic and a generator Adam step;
* MAML: an inner SGD step on a conv + MLP classifier with ``create_graph=True`` and
  cross_entropy, the outer (query) loss back-propagated to the initial weights, an outer
  Adam step;
* PINN: the residual of Burgers' equation ``u_t + u u_x - nu u_xx`` for a tanh MLP
  ``u(x, t)``, ``u_x``/``u_xx`` by ``autograd.grad`` twice, the loss back-propagated to the
  weights, an Adam step.
"""

from __future__ import annotations

import numpy as np
import torch

import shardflow as sf

RNG = np.random.default_rng(0)


def _same_weights(tm, sm):
    """Copy the torch module's (float64) parameters into the shardflow module."""
    sm.load_state_dict({k: sf.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})


def _params(module):
    return [p.detach().numpy().copy() for p in module.parameters()]


def _compare(run, *args):
    got, want = run(sf, *args), run(torch, *args)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------- WGAN-GP
def _critic(m):
    nn = m.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.LeakyReLU(0.2),
        # no bias before the norm (its gradient is rounding noise, which Adam would scale up)
        nn.Conv2d(4, 4, 3, stride=2, padding=1, bias=False), nn.InstanceNorm2d(4, affine=True),
        nn.LeakyReLU(0.2),
        nn.Flatten(), nn.Linear(16, 1),
    ).double()


def _generator(m):
    nn = m.nn
    return nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 64), nn.Tanh()).double()


def _wgan_gp(m, weights, data):
    critic, gen = _critic(m), _generator(m)
    if m is sf:
        _same_weights(weights[0], critic)
        _same_weights(weights[1], gen)
    else:
        critic.load_state_dict(weights[0].state_dict())
        gen.load_state_dict(weights[1].state_dict())
    c_opt = m.optim.Adam(critic.parameters(), lr=1e-2, betas=(0.5, 0.9))
    g_opt = m.optim.Adam(gen.parameters(), lr=1e-2, betas=(0.5, 0.9))
    out = []
    for real, z, alpha in data:
        real, z, alpha = m.tensor(real), m.tensor(z), m.tensor(alpha)
        n = real.shape[0]
        fake = gen(z).view(n, 1, 8, 8).detach()
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        d_interp = critic(interp)
        (grad,) = m.autograd.grad(d_interp, interp, grad_outputs=m.ones_like(d_interp), create_graph=True)
        grad = grad.view(n, -1)
        gp = ((grad.norm(2, dim=1) - 1) ** 2).mean()
        c_loss = critic(fake).mean() - critic(real).mean() + 10.0 * gp
        c_opt.zero_grad()
        c_loss.backward()
        c_opt.step()
        g_loss = -critic(gen(z).view(n, 1, 8, 8)).mean()
        g_opt.zero_grad()
        g_loss.backward()
        g_opt.step()
        out += [gp.detach().numpy(), c_loss.detach().numpy(), g_loss.detach().numpy()]
    return out + _params(critic) + _params(gen)


def test_wgan_gp_steps_match_torch():
    torch.manual_seed(0)
    weights = (_critic(torch), _generator(torch))
    data = [(RNG.standard_normal((4, 1, 8, 8)), RNG.standard_normal((4, 3)), RNG.uniform(0, 1, (4, 1, 1, 1)))
            for _ in range(2)]
    _compare(_wgan_gp, weights, data)


# ---------------------------------------------------------------------------- MAML
def _maml_init():
    """Initial weights: conv (2, 1, 3, 3) + bias, linear (8 -> 3) + bias on 2x2 pooled maps."""
    return [RNG.standard_normal((2, 1, 3, 3)) * 0.5, np.zeros(2),
            RNG.standard_normal((3, 8)) * 0.5, np.zeros(3)]


def _maml_net(m, params, x):
    F = m.nn.functional
    w1, b1, w2, b2 = params
    h = F.relu(F.conv2d(x, w1, b1, padding=1))  # (N, 2, 4, 4)
    h = F.max_pool2d(h, 2).flatten(1)  # (N, 8)
    return F.linear(h, w2, b2)


def _maml(m, init, tasks):
    F = m.nn.functional
    params = [m.tensor(a, requires_grad=True) for a in init]
    opt = m.optim.Adam(params, lr=1e-2)
    inner_lr = 0.4
    out = []
    for _ in range(2):
        opt.zero_grad()
        total = 0.0
        for xs, ys, xq, yq in tasks:
            xs, xq, ys, yq = m.tensor(xs), m.tensor(xq), m.tensor(ys), m.tensor(yq)
            inner = F.cross_entropy(_maml_net(m, params, xs), ys)
            grads = m.autograd.grad(inner, params, create_graph=True)
            fast = [p - inner_lr * g for p, g in zip(params, grads)]
            outer = F.cross_entropy(_maml_net(m, fast, xq), yq)
            outer.backward()  # to the initial weights, through the inner step
            total = total + outer.detach()
        opt.step()
        out.append(np.asarray(total.numpy()))
    return out + [p.detach().numpy() for p in params]


def test_maml_outer_step_matches_torch():
    init = _maml_init()
    tasks = [(RNG.standard_normal((5, 1, 4, 4)), RNG.integers(0, 3, 5),
              RNG.standard_normal((5, 1, 4, 4)), RNG.integers(0, 3, 5)) for _ in range(2)]
    _compare(_maml, init, tasks)


# ---------------------------------------------------------------------------- PINN
def _pinn_net(m):
    nn = m.nn
    return nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1)).double()


def _pinn(m, weights, xt, xb, ub):
    net = _pinn_net(m)
    if m is sf:
        _same_weights(weights, net)
    else:
        net.load_state_dict(weights.state_dict())
    opt = m.optim.Adam(net.parameters(), lr=1e-2)
    nu = 0.01 / np.pi
    out = []
    for _ in range(2):
        x = m.tensor(xt, requires_grad=True)  # (N, 2): columns x, t
        u = net(x)
        (du,) = m.autograd.grad(u.sum(), x, create_graph=True)
        u_x, u_t = du[:, 0:1], du[:, 1:2]
        (du_x,) = m.autograd.grad(u_x.sum(), x, create_graph=True)
        u_xx = du_x[:, 0:1]
        residual = u_t + u * u_x - nu * u_xx
        boundary = m.nn.functional.mse_loss(net(m.tensor(xb)), m.tensor(ub))
        loss = (residual ** 2).mean() + boundary
        opt.zero_grad()
        loss.backward()
        opt.step()
        out += [loss.detach().numpy(), u_xx.detach().numpy()]
    return out + _params(net)


def test_pinn_residual_step_matches_torch():
    torch.manual_seed(1)
    weights = _pinn_net(torch)
    xt = RNG.uniform(-1, 1, (6, 2))
    xb = np.stack([RNG.choice([-1.0, 1.0], 4), RNG.uniform(0, 1, 4)], axis=1)
    ub = np.zeros((4, 1))
    _compare(_pinn, weights, xt, xb, ub)
