"""CleanRL's single-file PPO, discrete (``ppo.py``) and continuous (``ppo_continuous_action.py``).

Modelled on vwxyzjn/cleanrl ``cleanrl/ppo.py`` and ``cleanrl/ppo_continuous_action.py``; a
re-implementation in this project's own words, not a copy. It keeps those programs' torch
calls and habits: ``layer_init`` with ``torch.nn.init.orthogonal_(layer.weight, std)`` and
``constant_(layer.bias, 0.0)``, ``Categorical(logits=...)`` or ``Normal(mean, exp(logstd))``
with ``actor_logstd = nn.Parameter(torch.zeros(1, act_dim))`` ``.expand_as(action_mean)``,
rollout storage preallocated with ``torch.zeros((num_steps, num_envs) + shape)``,
``torch.Tensor(next_obs)``, ``torch.tensor(reward).view(-1)``, GAE computed backwards under
``torch.no_grad()``, minibatches from ``np.random.shuffle(b_inds)``, ``logratio.exp()``, the
two KL estimates, ``clipfracs`` from ``((ratio - 1.0).abs() > clip_coef).float().mean()``,
normalised advantages, ``torch.max(pg_loss1, pg_loss2).mean()``, the clipped value loss,
``nn.utils.clip_grad_norm_``, learning-rate annealing through
``optimizer.param_groups[0]["lr"]``, and explained variance in NumPy.

Changed for a test: no gym vector env, tyro or tensorboard -- ``SyncPointMass`` (two seeded
point masses with ``single_observation_space``/``single_action_space`` and auto-reset), a
dataclass of arguments parsed by argparse, and the scalars ``writer.add_scalar`` would log
printed; tiny sizes. Run as ``cleanrl_ppo.py [--continuous]``.
"""

import argparse
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions.categorical import Categorical
from torch.distributions.normal import Normal


@dataclass
class Args:
    seed: int = 1
    torch_deterministic: bool = True
    continuous: bool = False
    total_timesteps: int = 96
    learning_rate: float = 2.5e-3
    num_envs: int = 2
    num_steps: int = 16
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 2
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float = None
    batch_size: int = 0
    minibatch_size: int = 0
    num_iterations: int = 0


class Space:
    def __init__(self, shape, n=None):
        self.shape, self.n = shape, n


class SyncPointMass:
    """``num_envs`` point masses stepped together; an episode ends after 12 steps and the
    env resets itself (gym's vector-env auto-reset); the reward is -|x|."""

    def __init__(self, num_envs, continuous, seed):
        self.num_envs, self.continuous = num_envs, continuous
        self.rng = np.random.default_rng(seed)
        self.single_observation_space = Space((3,))
        self.single_action_space = Space((1,)) if continuous else Space((), n=3)
        self.x = np.zeros(num_envs)
        self.v = np.zeros(num_envs)
        self.t = np.zeros(num_envs, dtype=np.int64)

    def _obs(self):
        return np.stack([self.x, self.v, self.t / 12.0], axis=1).astype(np.float32)

    def reset(self, seed=None):
        self.x = self.rng.uniform(-1, 1, self.num_envs)
        self.v[:], self.t[:] = 0.0, 0
        return self._obs(), {}

    def step(self, action):
        push = np.clip(action[:, 0], -1, 1) if self.continuous else (action - 1) * 0.5
        self.v = 0.9 * self.v + 0.1 * push
        self.x = self.x + 0.1 * self.v
        self.t += 1
        reward = -np.abs(self.x)
        truncations = self.t >= 12
        terminations = np.zeros(self.num_envs, dtype=bool)
        for i in np.nonzero(truncations)[0]:
            self.x[i], self.v[i], self.t[i] = self.rng.uniform(-1, 1), 0.0, 0
        return self._obs(), reward, terminations, truncations, {}


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        obs_dim = np.array(envs.single_observation_space.shape).prod()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 16)), nn.Tanh(),
            layer_init(nn.Linear(16, 16)), nn.Tanh(),
            layer_init(nn.Linear(16, 1), std=1.0),
        )
        self.continuous = envs.single_action_space.n is None
        out = np.prod(envs.single_action_space.shape) if self.continuous else envs.single_action_space.n
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 16)), nn.Tanh(),
            layer_init(nn.Linear(16, 16)), nn.Tanh(),
            layer_init(nn.Linear(16, out), std=0.01),
        )
        if self.continuous:
            self.actor_logstd = nn.Parameter(torch.zeros(1, np.prod(envs.single_action_space.shape)))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        if self.continuous:
            action_mean = self.actor(x)
            action_logstd = self.actor_logstd.expand_as(action_mean)
            action_std = torch.exp(action_logstd)
            probs = Normal(action_mean, action_std)
            if action is None:
                action = probs.sample()
            return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--continuous", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parsed = parser.parse_args(argv)
    args = Args(seed=parsed.seed, continuous=parsed.continuous)
    args.batch_size = int(args.num_envs * args.num_steps)
    args.minibatch_size = int(args.batch_size // args.num_minibatches)
    args.num_iterations = args.total_timesteps // args.batch_size

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    device = torch.device("cuda" if torch.cuda.is_available() and False else "cpu")

    envs = SyncPointMass(args.num_envs, args.continuous, args.seed)
    agent = Agent(envs).to(device)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    print(agent)

    obs = torch.zeros((args.num_steps, args.num_envs) + envs.single_observation_space.shape).to(device)
    actions = torch.zeros((args.num_steps, args.num_envs) + envs.single_action_space.shape).to(device)
    logprobs = torch.zeros((args.num_steps, args.num_envs)).to(device)
    rewards = torch.zeros((args.num_steps, args.num_envs)).to(device)
    dones = torch.zeros((args.num_steps, args.num_envs)).to(device)
    values = torch.zeros((args.num_steps, args.num_envs)).to(device)

    global_step = 0
    next_obs, _ = envs.reset(seed=args.seed)
    next_obs = torch.Tensor(next_obs).to(device)
    next_done = torch.zeros(args.num_envs).to(device)

    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            lrnow = frac * args.learning_rate
            optimizer.param_groups[0]["lr"] = lrnow

        for step in range(0, args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
            next_done = np.logical_or(terminations, truncations)
            rewards[step] = torch.tensor(reward).to(device).view(-1)
            next_obs, next_done = torch.Tensor(next_obs).to(device), torch.Tensor(next_done).to(device)

        with torch.no_grad():  # bootstrap value and GAE
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards).to(device)
            lastgaelam = 0
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1,) + envs.single_observation_space.shape)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1,) + envs.single_action_space.shape)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        b_inds = np.arange(args.batch_size)
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for start in range(0, args.batch_size, args.minibatch_size):
                end = start + args.minibatch_size
                mb_inds = b_inds[start:end]
                mb_actions = b_actions[mb_inds] if args.continuous else b_actions.long()[mb_inds]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], mb_actions)
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]
                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef)
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = 0.5 * v_loss_max.mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        print(f"iteration {iteration} global_step {global_step} "
              f"learning_rate {optimizer.param_groups[0]['lr']:.6f} value_loss {v_loss.item():.6f} "
              f"policy_loss {pg_loss.item():.6f} entropy {entropy_loss.item():.6f} "
              f"old_approx_kl {old_approx_kl.item():.6f} approx_kl {approx_kl.item():.6f} "
              f"clipfrac {np.mean(clipfracs):.6f} explained_variance {explained_var:.6f}")
    return agent


if __name__ == "__main__":
    agent = main()
