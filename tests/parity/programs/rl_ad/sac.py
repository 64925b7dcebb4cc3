# ruff: noqa: UP004, UP008, UP032  (the modelled programs' own style kept)
"""Soft actor-critic with twin Q networks and automatic entropy tuning.

Modelled on pranz24/pytorch-soft-actor-critic (``model.py``, ``sac.py``, ``utils.py``,
``replay_memory.py``, ``main.py``); a re-implementation in this project's own words, not a
copy. It keeps that program's torch calls and habits: ``xavier_uniform_(gain=1)`` /
``constant_(bias, 0)`` through ``self.apply``, a two-headed ``QNetwork`` on
``torch.cat([state, action], 1)``, a ``GaussianPolicy`` whose ``log_std`` is
``torch.clamp``-ed and whose ``sample`` squashes ``Normal(mean, std).rsample()`` with
``torch.tanh`` and corrects the log-probability by ``log(scale * (1 - y^2) + eps)``, an
action scale held as a tensor, a ``DeterministicPolicy`` that draws its noise with
``self.noise.normal_(0., std=0.1)``, hard and soft target updates through ``.data.copy_``,
``log_alpha = torch.zeros(1, requires_grad=True)`` with its own Adam and
``target_entropy = -torch.prod(torch.Tensor(shape)).item()``, and a checkpoint dict of
state dicts.

Changed for a test: no gym -- a seeded, deterministic 2-D point mass (``Reach2D``) with a
``Box``-like action space stands in; tiny sizes and steps. Run as
``sac.py [--policy Gaussian|Deterministic] [--automatic_entropy_tuning True|False]``.
"""

import argparse
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal
from torch.optim import Adam

LOG_SIG_MAX = 2
LOG_SIG_MIN = -20
epsilon = 1e-6


# ---- environment stand-in -------------------------------------------------------------
class Box:
    def __init__(self, low, high, rng):
        self.low, self.high, self.shape = np.array(low), np.array(high), (len(low),)
        self.rng = rng

    def sample(self):
        return self.rng.uniform(self.low, self.high).astype(np.float32)


class Reach2D:
    """A point in the plane pushed by a 2-D action in [-2, 2]^2 towards the origin; the
    reward is minus the distance; an episode lasts ``horizon`` steps."""

    def __init__(self, seed, horizon=8):
        self.rng = np.random.default_rng(seed)
        self.action_space = Box([-2.0, -2.0], [2.0, 2.0], np.random.default_rng(seed + 1))
        self.horizon, self.t, self.pos = horizon, 0, None

    def reset(self):
        self.t, self.pos = 0, self.rng.uniform(-1, 1, size=2)
        return np.concatenate([self.pos, [0.0]]).astype(np.float32)

    def step(self, action):
        self.t += 1
        self.pos = self.pos + 0.1 * np.clip(action, -2, 2)
        obs = np.concatenate([self.pos, [self.t / self.horizon]]).astype(np.float32)
        return obs, -float(np.linalg.norm(self.pos)), self.t >= self.horizon, {}


# ---- utils ------------------------------------------------------------------------------
def soft_update(target, source, tau):
    for target_param, param in zip(target.parameters(), source.parameters()):
        target_param.data.copy_(target_param.data * (1.0 - tau) + param.data * tau)


def hard_update(target, source):
    for target_param, param in zip(target.parameters(), source.parameters()):
        target_param.data.copy_(param.data)


class ReplayMemory:
    def __init__(self, capacity, seed):
        random.seed(seed)
        self.capacity, self.buffer, self.position = capacity, [], 0

    def push(self, state, action, reward, next_state, done):
        if len(self.buffer) < self.capacity:
            self.buffer.append(None)
        self.buffer[self.position] = (state, action, reward, next_state, done)
        self.position = (self.position + 1) % self.capacity

    def sample(self, batch_size):
        batch = random.sample(self.buffer, batch_size)
        state, action, reward, next_state, done = map(np.stack, zip(*batch))
        return state, action, reward, next_state, done

    def __len__(self):
        return len(self.buffer)


# ---- model ------------------------------------------------------------------------------
def weights_init_(m):
    if isinstance(m, nn.Linear):
        torch.nn.init.xavier_uniform_(m.weight, gain=1)
        torch.nn.init.constant_(m.bias, 0)


class QNetwork(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_dim):
        super(QNetwork, self).__init__()
        self.linear1 = nn.Linear(num_inputs + num_actions, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, hidden_dim)
        self.linear3 = nn.Linear(hidden_dim, 1)
        self.linear4 = nn.Linear(num_inputs + num_actions, hidden_dim)
        self.linear5 = nn.Linear(hidden_dim, hidden_dim)
        self.linear6 = nn.Linear(hidden_dim, 1)
        self.apply(weights_init_)

    def forward(self, state, action):
        xu = torch.cat([state, action], 1)
        x1 = self.linear3(F.relu(self.linear2(F.relu(self.linear1(xu)))))
        x2 = self.linear6(F.relu(self.linear5(F.relu(self.linear4(xu)))))
        return x1, x2


class GaussianPolicy(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_dim, action_space=None):
        super(GaussianPolicy, self).__init__()
        self.linear1 = nn.Linear(num_inputs, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, hidden_dim)
        self.mean_linear = nn.Linear(hidden_dim, num_actions)
        self.log_std_linear = nn.Linear(hidden_dim, num_actions)
        self.apply(weights_init_)
        if action_space is None:
            self.action_scale = torch.tensor(1.)
            self.action_bias = torch.tensor(0.)
        else:
            self.action_scale = torch.FloatTensor((action_space.high - action_space.low) / 2.)
            self.action_bias = torch.FloatTensor((action_space.high + action_space.low) / 2.)

    def forward(self, state):
        x = F.relu(self.linear2(F.relu(self.linear1(state))))
        mean = self.mean_linear(x)
        log_std = torch.clamp(self.log_std_linear(x), min=LOG_SIG_MIN, max=LOG_SIG_MAX)
        return mean, log_std

    def sample(self, state):
        mean, log_std = self.forward(state)
        std = log_std.exp()
        normal = Normal(mean, std)
        x_t = normal.rsample()  # reparameterised: mean + std * N(0, 1)
        y_t = torch.tanh(x_t)
        action = y_t * self.action_scale + self.action_bias
        log_prob = normal.log_prob(x_t)
        # the tanh squashing changes the density: log |d action / d x_t|
        log_prob -= torch.log(self.action_scale * (1 - y_t.pow(2)) + epsilon)
        log_prob = log_prob.sum(1, keepdim=True)
        mean = torch.tanh(mean) * self.action_scale + self.action_bias
        return action, log_prob, mean

    def to(self, device):
        self.action_scale = self.action_scale.to(device)
        self.action_bias = self.action_bias.to(device)
        return super(GaussianPolicy, self).to(device)


class DeterministicPolicy(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_dim, action_space=None):
        super(DeterministicPolicy, self).__init__()
        self.linear1 = nn.Linear(num_inputs, hidden_dim)
        self.linear2 = nn.Linear(hidden_dim, hidden_dim)
        self.mean = nn.Linear(hidden_dim, num_actions)
        self.noise = torch.Tensor(num_actions)
        self.apply(weights_init_)
        if action_space is None:
            self.action_scale, self.action_bias = 1., 0.
        else:
            self.action_scale = torch.FloatTensor((action_space.high - action_space.low) / 2.)
            self.action_bias = torch.FloatTensor((action_space.high + action_space.low) / 2.)

    def forward(self, state):
        x = F.relu(self.linear2(F.relu(self.linear1(state))))
        return torch.tanh(self.mean(x)) * self.action_scale + self.action_bias

    def sample(self, state):
        mean = self.forward(state)
        noise = self.noise.normal_(0., std=0.1)
        noise = noise.clamp(-0.25, 0.25)
        return mean + noise, torch.tensor(0.), mean

    def to(self, device):
        self.action_scale = self.action_scale.to(device)
        self.action_bias = self.action_bias.to(device)
        self.noise = self.noise.to(device)
        return super(DeterministicPolicy, self).to(device)


# ---- agent ------------------------------------------------------------------------------
class SAC(object):
    def __init__(self, num_inputs, action_space, args):
        self.gamma, self.tau, self.alpha = args.gamma, args.tau, args.alpha
        self.policy_type = args.policy
        self.target_update_interval = args.target_update_interval
        self.automatic_entropy_tuning = args.automatic_entropy_tuning
        self.device = torch.device("cpu")

        self.critic = QNetwork(num_inputs, action_space.shape[0], args.hidden_size).to(device=self.device)
        self.critic_optim = Adam(self.critic.parameters(), lr=args.lr)
        self.critic_target = QNetwork(num_inputs, action_space.shape[0], args.hidden_size).to(self.device)
        hard_update(self.critic_target, self.critic)

        if self.policy_type == "Gaussian":
            if self.automatic_entropy_tuning is True:
                self.target_entropy = -torch.prod(torch.Tensor(action_space.shape).to(self.device)).item()
                self.log_alpha = torch.zeros(1, requires_grad=True, device=self.device)
                self.alpha_optim = Adam([self.log_alpha], lr=args.lr)
            self.policy = GaussianPolicy(num_inputs, action_space.shape[0], args.hidden_size, action_space).to(self.device)
        else:
            self.alpha, self.automatic_entropy_tuning = 0, False
            self.policy = DeterministicPolicy(num_inputs, action_space.shape[0], args.hidden_size, action_space).to(self.device)
        self.policy_optim = Adam(self.policy.parameters(), lr=args.lr)

    def select_action(self, state, evaluate=False):
        state = torch.FloatTensor(state).to(self.device).unsqueeze(0)
        if evaluate is False:
            action, _, _ = self.policy.sample(state)
        else:
            _, _, action = self.policy.sample(state)
        return action.detach().cpu().numpy()[0]

    def update_parameters(self, memory, batch_size, updates):
        state_batch, action_batch, reward_batch, next_state_batch, mask_batch = memory.sample(batch_size=batch_size)
        state_batch = torch.FloatTensor(state_batch).to(self.device)
        next_state_batch = torch.FloatTensor(next_state_batch).to(self.device)
        action_batch = torch.FloatTensor(action_batch).to(self.device)
        reward_batch = torch.FloatTensor(reward_batch).to(self.device).unsqueeze(1)
        mask_batch = torch.FloatTensor(mask_batch).to(self.device).unsqueeze(1)

        with torch.no_grad():
            next_state_action, next_state_log_pi, _ = self.policy.sample(next_state_batch)
            qf1_next_target, qf2_next_target = self.critic_target(next_state_batch, next_state_action)
            min_qf_next_target = torch.min(qf1_next_target, qf2_next_target) - self.alpha * next_state_log_pi
            next_q_value = reward_batch + mask_batch * self.gamma * (min_qf_next_target)
        qf1, qf2 = self.critic(state_batch, action_batch)
        qf1_loss = F.mse_loss(qf1, next_q_value)
        qf2_loss = F.mse_loss(qf2, next_q_value)
        qf_loss = qf1_loss + qf2_loss
        self.critic_optim.zero_grad()
        qf_loss.backward()
        self.critic_optim.step()

        pi, log_pi, _ = self.policy.sample(state_batch)
        qf1_pi, qf2_pi = self.critic(state_batch, pi)
        min_qf_pi = torch.min(qf1_pi, qf2_pi)
        policy_loss = ((self.alpha * log_pi) - min_qf_pi).mean()
        self.policy_optim.zero_grad()
        policy_loss.backward()
        self.policy_optim.step()

        if self.automatic_entropy_tuning:
            alpha_loss = -(self.log_alpha * (log_pi + self.target_entropy).detach()).mean()
            self.alpha_optim.zero_grad()
            alpha_loss.backward()
            self.alpha_optim.step()
            self.alpha = self.log_alpha.exp()
            alpha_tlogs = self.alpha.clone()
        else:
            alpha_loss = torch.tensor(0.).to(self.device)
            alpha_tlogs = torch.tensor(self.alpha)

        if updates % self.target_update_interval == 0:
            soft_update(self.critic_target, self.critic, self.tau)
        return qf1_loss.item(), qf2_loss.item(), policy_loss.item(), alpha_loss.item(), alpha_tlogs.item()

    def save_checkpoint(self, ckpt_path):
        torch.save({"policy_state_dict": self.policy.state_dict(),
                    "critic_state_dict": self.critic.state_dict(),
                    "critic_target_state_dict": self.critic_target.state_dict(),
                    "critic_optimizer_state_dict": self.critic_optim.state_dict(),
                    "policy_optimizer_state_dict": self.policy_optim.state_dict()}, ckpt_path)

    def load_checkpoint(self, ckpt_path, evaluate=False):
        checkpoint = torch.load(ckpt_path)
        self.policy.load_state_dict(checkpoint["policy_state_dict"])
        self.critic.load_state_dict(checkpoint["critic_state_dict"])
        self.critic_target.load_state_dict(checkpoint["critic_target_state_dict"])
        self.critic_optim.load_state_dict(checkpoint["critic_optimizer_state_dict"])
        self.policy_optim.load_state_dict(checkpoint["policy_optimizer_state_dict"])
        if evaluate:
            self.policy.eval()
            self.critic.eval()
            self.critic_target.eval()
        else:
            self.policy.train()
            self.critic.train()
            self.critic_target.train()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default="Gaussian")
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--tau", type=float, default=0.005)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--alpha", type=float, default=0.2)
    parser.add_argument("--automatic_entropy_tuning", type=bool, default=False)
    parser.add_argument("--seed", type=int, default=123456)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--num_steps", type=int, default=40)
    parser.add_argument("--hidden_size", type=int, default=16)
    parser.add_argument("--updates_per_step", type=int, default=1)
    parser.add_argument("--start_steps", type=int, default=12)
    parser.add_argument("--target_update_interval", type=int, default=1)
    parser.add_argument("--replay_size", type=int, default=1000)
    parser.add_argument("--ckpt", default="sac_checkpoint_reach")
    args = parser.parse_args(argv)

    env = Reach2D(args.seed)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    agent = SAC(3, env.action_space, args)
    print(agent.policy)
    print("target_entropy:", getattr(agent, "target_entropy", None), "log_alpha:", getattr(agent, "log_alpha", None))
    memory = ReplayMemory(args.replay_size, args.seed)

    total_numsteps, updates, i_episode, log = 0, 0, 1, []
    while total_numsteps < args.num_steps:
        episode_reward, episode_steps, done = 0, 0, False
        state = env.reset()
        while not done:
            if args.start_steps > total_numsteps:
                action = env.action_space.sample()
            else:
                action = agent.select_action(state)
            if len(memory) > args.batch_size:
                for _ in range(args.updates_per_step):
                    losses = agent.update_parameters(memory, args.batch_size, updates)
                    log.append(losses)
                    print("update {}: critic_1 {:.6f} critic_2 {:.6f} policy {:.6f} ent {:.6f} alpha {:.6f}".format(updates, *losses))
                    updates += 1
            next_state, reward, done, _ = env.step(action)
            episode_steps += 1
            total_numsteps += 1
            episode_reward += reward
            mask = 1 if episode_steps == env.horizon else float(not done)
            memory.push(state, action, reward, next_state, mask)
            state = next_state
        print("Episode: {}, total numsteps: {}, episode steps: {}, reward: {}".format(
            i_episode, total_numsteps, episode_steps, round(episode_reward, 4)))
        i_episode += 1

    state = env.reset()
    print("eval action:", " ".join(f"{a:.6f}" for a in agent.select_action(state, evaluate=True)))
    agent.save_checkpoint(args.ckpt)
    agent.load_checkpoint(args.ckpt, evaluate=True)
    print("policy training after load:", agent.policy.training)
    return agent, log


if __name__ == "__main__":
    main()
