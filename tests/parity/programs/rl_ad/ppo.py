"""PPO with a clipped surrogate, discrete and continuous actions.

Modelled on nikhilbarhate99/PPO-PyTorch ``PPO.py`` (``RolloutBuffer``, ``ActorCritic``,
``PPO``) and its ``train.py`` loop; a re-implementation in this project's own words, not a
copy. It keeps that program's torch calls and habits: ``Categorical`` over a softmax actor,
``MultivariateNormal`` with ``torch.diag(action_var).unsqueeze(dim=0)`` when acting and
``action_var.expand_as(action_mean)`` / ``torch.diag_embed`` when evaluating, detached
``act`` outputs kept in lists and stacked with ``torch.squeeze(torch.stack(..., dim=0))``,
discounted returns normalised by ``(r - r.mean()) / (r.std() + 1e-7)``, the clipped ratio
with ``torch.clamp``, ``nn.MSELoss``, two parameter groups in one Adam, the old policy
refreshed with ``load_state_dict(state_dict())``, a decaying action std, and a checkpoint
written with ``torch.save`` and read back with ``map_location=lambda storage, loc: storage``.

Changed for a test: no gym -- a seeded, deterministic point mass on a line (``PointMass``)
stands in; tiny sizes and steps. Run as ``ppo.py [--continuous] [--ckpt PATH]``.
"""

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical, MultivariateNormal

device = torch.device("cpu")


class PointMass:
    """A point on a line that should reach 0: the observation is (position, velocity), the
    reward is minus the distance. Discrete actions push left / nothing / right; a continuous
    action is a force in [-1, 1]. Deterministic apart from the seeded start."""

    def __init__(self, continuous, seed):
        self.continuous = continuous
        self.rng = np.random.default_rng(seed)
        self.state = None

    def reset(self):
        self.state = np.array([self.rng.uniform(-1.0, 1.0), 0.0])
        return self.state.astype(np.float32)

    def step(self, action):
        force = float(np.clip(action[0], -1, 1)) if self.continuous else (int(action) - 1) * 0.5
        pos, vel = self.state
        vel = 0.9 * vel + 0.1 * force
        pos = pos + 0.1 * vel
        self.state = np.array([pos, vel])
        return self.state.astype(np.float32), -abs(pos), abs(pos) > 2.0


class RolloutBuffer:
    def __init__(self):
        self.actions, self.states, self.logprobs = [], [], []
        self.rewards, self.state_values, self.is_terminals = [], [], []

    def clear(self):
        del self.actions[:]
        del self.states[:]
        del self.logprobs[:]
        del self.rewards[:]
        del self.state_values[:]
        del self.is_terminals[:]


class ActorCritic(nn.Module):
    def __init__(self, state_dim, action_dim, has_continuous_action_space, action_std_init):
        super().__init__()
        self.has_continuous_action_space = has_continuous_action_space
        if has_continuous_action_space:
            self.action_dim = action_dim
            self.action_var = torch.full((action_dim,), action_std_init * action_std_init).to(device)
            self.actor = nn.Sequential(
                nn.Linear(state_dim, 16), nn.Tanh(),
                nn.Linear(16, 16), nn.Tanh(),
                nn.Linear(16, action_dim), nn.Tanh(),
            )
        else:
            self.actor = nn.Sequential(
                nn.Linear(state_dim, 16), nn.Tanh(),
                nn.Linear(16, 16), nn.Tanh(),
                nn.Linear(16, action_dim), nn.Softmax(dim=-1),
            )
        self.critic = nn.Sequential(
            nn.Linear(state_dim, 16), nn.Tanh(),
            nn.Linear(16, 16), nn.Tanh(),
            nn.Linear(16, 1),
        )

    def set_action_std(self, new_action_std):
        if self.has_continuous_action_space:
            self.action_var = torch.full((self.action_dim,), new_action_std * new_action_std).to(device)
        else:
            print("WARNING : Calling ActorCritic::set_action_std() on discrete action space policy")

    def forward(self):
        raise NotImplementedError

    def act(self, state):
        if self.has_continuous_action_space:
            action_mean = self.actor(state)
            cov_mat = torch.diag(self.action_var).unsqueeze(dim=0)
            dist = MultivariateNormal(action_mean, cov_mat)
        else:
            action_probs = self.actor(state)
            dist = Categorical(action_probs)
        action = dist.sample()
        action_logprob = dist.log_prob(action)
        state_val = self.critic(state)
        return action.detach(), action_logprob.detach(), state_val.detach()

    def evaluate(self, state, action):
        if self.has_continuous_action_space:
            action_mean = self.actor(state)
            action_var = self.action_var.expand_as(action_mean)
            cov_mat = torch.diag_embed(action_var).to(device)
            dist = MultivariateNormal(action_mean, cov_mat)
            if self.action_dim == 1:  # a single continuous action comes back flat
                action = action.reshape(-1, self.action_dim)
        else:
            action_probs = self.actor(state)
            dist = Categorical(action_probs)
        return dist.log_prob(action), self.critic(state), dist.entropy()


class PPO:
    def __init__(self, state_dim, action_dim, lr_actor, lr_critic, gamma, K_epochs, eps_clip,
                 has_continuous_action_space, action_std_init=0.6):
        self.has_continuous_action_space = has_continuous_action_space
        if has_continuous_action_space:
            self.action_std = action_std_init
        self.gamma, self.eps_clip, self.K_epochs = gamma, eps_clip, K_epochs
        self.buffer = RolloutBuffer()
        self.policy = ActorCritic(state_dim, action_dim, has_continuous_action_space, action_std_init).to(device)
        self.optimizer = torch.optim.Adam([
            {"params": self.policy.actor.parameters(), "lr": lr_actor},
            {"params": self.policy.critic.parameters(), "lr": lr_critic},
        ])
        self.policy_old = ActorCritic(state_dim, action_dim, has_continuous_action_space, action_std_init).to(device)
        self.policy_old.load_state_dict(self.policy.state_dict())
        self.MseLoss = nn.MSELoss()

    def set_action_std(self, new_action_std):
        self.action_std = new_action_std
        self.policy.set_action_std(new_action_std)
        self.policy_old.set_action_std(new_action_std)

    def decay_action_std(self, action_std_decay_rate, min_action_std):
        self.action_std = round(self.action_std - action_std_decay_rate, 4)
        if self.action_std <= min_action_std:
            self.action_std = min_action_std
            print("setting actor output action_std to min_action_std : ", self.action_std)
        else:
            print("setting actor output action_std to : ", self.action_std)
        self.set_action_std(self.action_std)

    def select_action(self, state):
        with torch.no_grad():
            state = torch.FloatTensor(state).to(device)
            action, action_logprob, state_val = self.policy_old.act(state)
        self.buffer.states.append(state)
        self.buffer.actions.append(action)
        self.buffer.logprobs.append(action_logprob)
        self.buffer.state_values.append(state_val)
        if self.has_continuous_action_space:
            return action.detach().cpu().numpy().flatten()
        return action.item()

    def update(self):
        # Monte-Carlo returns, reset at episode ends
        rewards, discounted = [], 0
        for reward, is_terminal in zip(reversed(self.buffer.rewards), reversed(self.buffer.is_terminals)):
            if is_terminal:
                discounted = 0
            discounted = reward + (self.gamma * discounted)
            rewards.insert(0, discounted)
        rewards = torch.tensor(rewards, dtype=torch.float32).to(device)
        rewards = (rewards - rewards.mean()) / (rewards.std() + 1e-7)

        old_states = torch.squeeze(torch.stack(self.buffer.states, dim=0)).detach().to(device)
        old_actions = torch.squeeze(torch.stack(self.buffer.actions, dim=0)).detach().to(device)
        old_logprobs = torch.squeeze(torch.stack(self.buffer.logprobs, dim=0)).detach().to(device)
        old_state_values = torch.squeeze(torch.stack(self.buffer.state_values, dim=0)).detach().to(device)
        advantages = rewards.detach() - old_state_values.detach()

        losses = []
        for _ in range(self.K_epochs):
            logprobs, state_values, dist_entropy = self.policy.evaluate(old_states, old_actions)
            state_values = torch.squeeze(state_values)
            ratios = torch.exp(logprobs - old_logprobs.detach())
            surr1 = ratios * advantages
            surr2 = torch.clamp(ratios, 1 - self.eps_clip, 1 + self.eps_clip) * advantages
            loss = -torch.min(surr1, surr2) + 0.5 * self.MseLoss(state_values, rewards) - 0.01 * dist_entropy
            self.optimizer.zero_grad()
            loss.mean().backward()
            self.optimizer.step()
            losses.append(loss.mean().item())

        self.policy_old.load_state_dict(self.policy.state_dict())
        self.buffer.clear()
        return losses

    def save(self, checkpoint_path):
        torch.save(self.policy_old.state_dict(), checkpoint_path)

    def load(self, checkpoint_path):
        self.policy_old.load_state_dict(torch.load(checkpoint_path, map_location=lambda storage, loc: storage))
        self.policy.load_state_dict(torch.load(checkpoint_path, map_location=lambda storage, loc: storage))


def train(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--continuous", action="store_true")
    parser.add_argument("--ckpt", default="PPO_pointmass.pth")
    args = parser.parse_args(argv)
    has_continuous_action_space = args.continuous

    max_ep_len, max_training_timesteps = 12, 72
    update_timestep = max_ep_len * 2
    action_std, action_std_decay_rate, min_action_std = 0.6, 0.25, 0.2
    action_std_decay_freq = 36
    K_epochs, eps_clip, gamma = 3, 0.2, 0.99
    lr_actor, lr_critic = 0.003, 0.01
    random_seed = 3

    env = PointMass(has_continuous_action_space, seed=random_seed)
    state_dim = 2
    action_dim = 1 if has_continuous_action_space else 3
    torch.manual_seed(random_seed)
    np.random.seed(random_seed)

    ppo_agent = PPO(state_dim, action_dim, lr_actor, lr_critic, gamma, K_epochs, eps_clip,
                    has_continuous_action_space, action_std)
    print(ppo_agent.policy)
    print("optimizer groups:", [len(g["params"]) for g in ppo_agent.optimizer.param_groups])

    time_step, i_episode, all_losses = 0, 0, []
    while time_step <= max_training_timesteps:
        state = env.reset()
        current_ep_reward = 0
        for _ in range(1, max_ep_len + 1):
            action = ppo_agent.select_action(state)
            state, reward, done = env.step(action)
            ppo_agent.buffer.rewards.append(reward)
            ppo_agent.buffer.is_terminals.append(done)
            time_step += 1
            current_ep_reward += reward
            if time_step % update_timestep == 0:
                losses = ppo_agent.update()
                all_losses += losses
                print(f"update at {time_step}: losses " + " ".join(f"{v:.6f}" for v in losses))
            if has_continuous_action_space and time_step % action_std_decay_freq == 0:
                ppo_agent.decay_action_std(action_std_decay_rate, min_action_std)
            if done:
                break
        print(f"Episode : {i_episode} \t Timestep : {time_step} \t Reward : {round(current_ep_reward, 4)}")
        i_episode += 1

    ppo_agent.save(args.ckpt)
    fresh = PPO(state_dim, action_dim, lr_actor, lr_critic, gamma, K_epochs, eps_clip,
                has_continuous_action_space, action_std)
    fresh.load(args.ckpt)
    print("reloaded keys:", list(fresh.policy.state_dict().keys())[:4])
    return ppo_agent, fresh, all_losses


if __name__ == "__main__":
    train()
