# ruff: noqa: UP031, B006  (the modelled program's own style kept)
"""Spinning Up's PPO (clip), discrete and continuous, in one file.

Modelled on openai/spinningup ``spinup/algos/pytorch/ppo/core.py`` and ``ppo.py`` (as
published: a V(s) critic); a re-implementation in this project's own words, not a copy. It
keeps that program's torch calls and habits: ``mlp`` building an ``nn.Sequential`` ending in
``nn.Identity``, ``count_vars`` by ``np.prod(p.shape)``, ``scipy.signal.lfilter`` discounted
sums, an ``MLPCategoricalActor`` (``Categorical(logits=...)``) and an ``MLPGaussianActor``
with a free ``log_std = nn.Parameter(torch.as_tensor(-0.5 * np.ones(act_dim, np.float32)))``
and ``Normal(mu, torch.exp(log_std))`` whose ``log_prob(act).sum(axis=-1)``, ``step``
under ``torch.no_grad()`` returning ``.numpy()`` arrays, a GAE-lambda buffer returning
``torch.as_tensor(v, dtype=torch.float32)`` batches, the clipped objective with
``torch.clamp(ratio, 1-clip, 1+clip) * adv``, ``approx_kl``/``entropy``/``clipfrac``
diagnostics (``ratio.gt(1+clip) | ratio.lt(1-clip)``), early stopping on ``1.5 * target_kl``,
and ``((ac.v(obs) - ret)**2).mean()``.

Changed for a test: no gym and no MPI -- a seeded point mass with ``Box``/``Discrete``
spaces of its own, one process (the MPI averages are the identity there); no logger (the
values it would log are printed); tiny sizes. Run as ``spinup_ppo.py [--discrete]``.
"""

import argparse

import numpy as np
import scipy.signal
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical
from torch.distributions.normal import Normal
from torch.optim import Adam


class Box:
    def __init__(self, low, high, shape):
        self.low, self.high, self.shape = low, high, shape


class Discrete:
    def __init__(self, n):
        self.n, self.shape = n, ()


class PointMass:
    """Push a point to 0 on a line; a continuous push in R (clipped to [-1, 1]) or one of
    three discrete pushes; reward -|x|; episodes of ``horizon`` steps."""

    def __init__(self, discrete, seed, horizon=10):
        self.discrete, self.horizon = discrete, horizon
        self.rng = np.random.default_rng(seed)
        self.observation_space = Box(-np.inf, np.inf, (3,))
        self.action_space = Discrete(3) if discrete else Box(-1.0, 1.0, (1,))
        self.x = self.v = 0.0
        self.t = 0

    def _obs(self):
        return np.array([self.x, self.v, self.t / self.horizon], dtype=np.float32)

    def reset(self):
        self.x, self.v, self.t = float(self.rng.uniform(-1, 1)), 0.0, 0
        return self._obs()

    def step(self, a):
        push = (int(a) - 1) * 0.5 if self.discrete else float(np.clip(a[0], -1, 1))
        self.v = 0.9 * self.v + 0.1 * push
        self.x += 0.1 * self.v
        self.t += 1
        return self._obs(), -abs(self.x), self.t >= self.horizon, {}


# ---- core ---------------------------------------------------------------------------------
def combined_shape(length, shape=None):
    if shape is None:
        return (length,)
    return (length, shape) if np.isscalar(shape) else (length, *shape)


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


def count_vars(module):
    return sum([np.prod(p.shape) for p in module.parameters()])


def discount_cumsum(x, discount):
    """[x0 + d x1 + d^2 x2, x1 + d x2, x2] by a linear filter run backwards."""
    return scipy.signal.lfilter([1], [1, float(-discount)], x[::-1], axis=0)[::-1]


class Actor(nn.Module):
    def _distribution(self, obs):
        raise NotImplementedError

    def _log_prob_from_distribution(self, pi, act):
        raise NotImplementedError

    def forward(self, obs, act=None):
        pi = self._distribution(obs)
        logp_a = None
        if act is not None:
            logp_a = self._log_prob_from_distribution(pi, act)
        return pi, logp_a


class MLPCategoricalActor(Actor):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.logits_net = mlp([obs_dim] + list(hidden_sizes) + [act_dim], activation)

    def _distribution(self, obs):
        return Categorical(logits=self.logits_net(obs))

    def _log_prob_from_distribution(self, pi, act):
        return pi.log_prob(act)


class MLPGaussianActor(Actor):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        log_std = -0.5 * np.ones(act_dim, dtype=np.float32)
        self.log_std = torch.nn.Parameter(torch.as_tensor(log_std))
        self.mu_net = mlp([obs_dim] + list(hidden_sizes) + [act_dim], activation)

    def _distribution(self, obs):
        mu = self.mu_net(obs)
        std = torch.exp(self.log_std)
        return Normal(mu, std)

    def _log_prob_from_distribution(self, pi, act):
        return pi.log_prob(act).sum(axis=-1)  # one log-probability per action vector


class MLPCritic(nn.Module):
    def __init__(self, obs_dim, hidden_sizes, activation):
        super().__init__()
        self.v_net = mlp([obs_dim] + list(hidden_sizes) + [1], activation)

    def forward(self, obs):
        return torch.squeeze(self.v_net(obs), -1)


class MLPActorCritic(nn.Module):
    def __init__(self, observation_space, action_space, hidden_sizes=(16, 16), activation=nn.Tanh):
        super().__init__()
        obs_dim = observation_space.shape[0]
        if isinstance(action_space, Box):
            self.pi = MLPGaussianActor(obs_dim, action_space.shape[0], hidden_sizes, activation)
        elif isinstance(action_space, Discrete):
            self.pi = MLPCategoricalActor(obs_dim, action_space.n, hidden_sizes, activation)
        self.v = MLPCritic(obs_dim, hidden_sizes, activation)

    def step(self, obs):
        with torch.no_grad():
            pi = self.pi._distribution(obs)
            a = pi.sample()
            logp_a = self.pi._log_prob_from_distribution(pi, a)
            v = self.v(obs)
        return a.numpy(), v.numpy(), logp_a.numpy()

    def act(self, obs):
        return self.step(obs)[0]


# ---- ppo ----------------------------------------------------------------------------------
class PPOBuffer:
    def __init__(self, obs_dim, act_dim, size, gamma=0.99, lam=0.95):
        self.obs_buf = np.zeros(combined_shape(size, obs_dim), dtype=np.float32)
        self.act_buf = np.zeros(combined_shape(size, act_dim), dtype=np.float32)
        self.adv_buf = np.zeros(size, dtype=np.float32)
        self.rew_buf = np.zeros(size, dtype=np.float32)
        self.ret_buf = np.zeros(size, dtype=np.float32)
        self.val_buf = np.zeros(size, dtype=np.float32)
        self.logp_buf = np.zeros(size, dtype=np.float32)
        self.gamma, self.lam = gamma, lam
        self.ptr, self.path_start_idx, self.max_size = 0, 0, size

    def store(self, obs, act, rew, val, logp):
        assert self.ptr < self.max_size
        self.obs_buf[self.ptr] = obs
        self.act_buf[self.ptr] = act
        self.rew_buf[self.ptr] = rew
        self.val_buf[self.ptr] = val
        self.logp_buf[self.ptr] = logp
        self.ptr += 1

    def finish_path(self, last_val=0):
        path_slice = slice(self.path_start_idx, self.ptr)
        rews = np.append(self.rew_buf[path_slice], last_val)
        vals = np.append(self.val_buf[path_slice], last_val)
        deltas = rews[:-1] + self.gamma * vals[1:] - vals[:-1]  # GAE-lambda advantages
        self.adv_buf[path_slice] = discount_cumsum(deltas, self.gamma * self.lam)
        self.ret_buf[path_slice] = discount_cumsum(rews, self.gamma)[:-1]
        self.path_start_idx = self.ptr

    def get(self):
        assert self.ptr == self.max_size
        self.ptr, self.path_start_idx = 0, 0
        adv_mean, adv_std = np.mean(self.adv_buf), np.std(self.adv_buf)
        self.adv_buf = (self.adv_buf - adv_mean) / adv_std
        data = dict(obs=self.obs_buf, act=self.act_buf, ret=self.ret_buf,
                    adv=self.adv_buf, logp=self.logp_buf)
        return {k: torch.as_tensor(v, dtype=torch.float32) for k, v in data.items()}


def ppo(env_fn, actor_critic=MLPActorCritic, ac_kwargs=dict(), seed=0, steps_per_epoch=40,
        epochs=3, gamma=0.99, clip_ratio=0.2, pi_lr=3e-3, vf_lr=1e-2, train_pi_iters=8,
        train_v_iters=8, lam=0.97, max_ep_len=10, target_kl=0.01):
    torch.manual_seed(seed)
    np.random.seed(seed)
    env = env_fn()
    obs_dim = env.observation_space.shape
    act_dim = env.action_space.shape
    ac = actor_critic(env.observation_space, env.action_space, **ac_kwargs)
    print(ac)
    var_counts = tuple(count_vars(module) for module in [ac.pi, ac.v])
    print("\nNumber of parameters: \t pi: %d, \t v: %d\n" % var_counts)
    buf = PPOBuffer(obs_dim, act_dim, steps_per_epoch, gamma, lam)

    def compute_loss_pi(data):
        obs, act, adv, logp_old = data["obs"], data["act"], data["adv"], data["logp"]
        pi, logp = ac.pi(obs, act)
        ratio = torch.exp(logp - logp_old)
        clip_adv = torch.clamp(ratio, 1 - clip_ratio, 1 + clip_ratio) * adv
        loss_pi = -(torch.min(ratio * adv, clip_adv)).mean()
        approx_kl = (logp_old - logp).mean().item()
        ent = pi.entropy().mean().item()
        clipped = ratio.gt(1 + clip_ratio) | ratio.lt(1 - clip_ratio)
        clipfrac = torch.as_tensor(clipped, dtype=torch.float32).mean().item()
        return loss_pi, dict(kl=approx_kl, ent=ent, cf=clipfrac)

    def compute_loss_v(data):
        obs, ret = data["obs"], data["ret"]
        return ((ac.v(obs) - ret) ** 2).mean()

    pi_optimizer = Adam(ac.pi.parameters(), lr=pi_lr)
    vf_optimizer = Adam(ac.v.parameters(), lr=vf_lr)

    def update():
        data = buf.get()
        pi_l_old, pi_info_old = compute_loss_pi(data)
        pi_l_old = pi_l_old.item()
        v_l_old = compute_loss_v(data).item()
        for i in range(train_pi_iters):
            pi_optimizer.zero_grad()
            loss_pi, pi_info = compute_loss_pi(data)
            kl = pi_info["kl"]
            if kl > 1.5 * target_kl:
                print("Early stopping at step %d due to reaching max kl." % i)
                break
            loss_pi.backward()
            pi_optimizer.step()
        for _ in range(train_v_iters):
            vf_optimizer.zero_grad()
            loss_v = compute_loss_v(data)
            loss_v.backward()
            vf_optimizer.step()
        kl, ent, cf = pi_info["kl"], pi_info_old["ent"], pi_info["cf"]
        print(f"LossPi {pi_l_old:.6f} LossV {v_l_old:.6f} KL {kl:.6f} Entropy {ent:.6f} "
              f"ClipFrac {cf:.6f} DeltaLossPi {loss_pi.item() - pi_l_old:.6f} "
              f"DeltaLossV {loss_v.item() - v_l_old:.6f}")

    o, ep_ret, ep_len = env.reset(), 0, 0
    for epoch in range(epochs):
        for t in range(steps_per_epoch):
            a, v, logp = ac.step(torch.as_tensor(o, dtype=torch.float32))
            next_o, r, d, _ = env.step(a)
            ep_ret += r
            ep_len += 1
            buf.store(o, a, r, v, logp)
            o = next_o
            timeout = ep_len == max_ep_len
            terminal = d or timeout
            epoch_ended = t == steps_per_epoch - 1
            if terminal or epoch_ended:
                if epoch_ended and not terminal:
                    print("Warning: trajectory cut off by epoch at %d steps." % ep_len, flush=True)
                if timeout or epoch_ended:  # bootstrap from the value of the last state
                    _, v, _ = ac.step(torch.as_tensor(o, dtype=torch.float32))
                else:
                    v = 0
                buf.finish_path(v)
                if terminal:
                    print(f"EpRet {ep_ret:.6f} EpLen {ep_len}")
                o, ep_ret, ep_len = env.reset(), 0, 0
        update()
        print(f"Epoch {epoch} done")
    return ac


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--discrete", action="store_true")
    parser.add_argument("--hid", type=int, default=16)
    parser.add_argument("--l", type=int, default=2)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--seed", "-s", type=int, default=0)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)
    return ppo(lambda: PointMass(args.discrete, args.seed), actor_critic=MLPActorCritic,
               ac_kwargs=dict(hidden_sizes=[args.hid] * args.l), gamma=args.gamma,
               seed=args.seed, steps_per_epoch=args.steps, epochs=args.epochs)


if __name__ == "__main__":
    main()
