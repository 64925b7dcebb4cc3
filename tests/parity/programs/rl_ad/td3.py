# ruff: noqa: UP004, UP008, UP032  (the modelled programs' own style kept)
"""TD3 and DDPG with a NumPy replay buffer.

Modelled on sfujim/TD3 (``TD3.py``, ``DDPG.py``, ``utils.py``, ``main.py``), gathered in
one file; a re-implementation in this project's own words, not a copy. It keeps that
program's torch calls and habits: ``copy.deepcopy`` target networks, target policy
smoothing with ``(torch.randn_like(action) * policy_noise).clamp(-noise_clip, noise_clip)``,
``torch.min(target_Q1, target_Q2)``, ``F.mse_loss`` on both critics, delayed actor and
target updates every ``policy_freq`` iterations, Polyak updates through
``target_param.data.copy_(tau * param.data + (1 - tau) * target_param.data)``,
``select_action`` through ``torch.FloatTensor(state.reshape(1, -1))`` and
``.cpu().data.numpy().flatten()``, a replay buffer of NumPy arrays sampled with
``np.random.randint`` and returned as ``torch.FloatTensor``s, Gaussian exploration noise from
``np.random.normal``, and ``torch.save`` of each state dict under ``filename + "_critic"``...

Changed for a test: no gym -- a seeded, deterministic 1-D point mass (``Slider``) stands in;
tiny sizes and steps. Run as ``td3.py [--policy TD3|DDPG] [--save_model]``.
"""

import argparse
import copy
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cpu")


class Slider:
    """A cart on a rail pushed by a force in [-max_action, max_action]; the reward is minus
    the squared distance to 0.5; episodes last 10 steps."""

    max_action = 1.0

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.t, self.x, self.v = 0, 0.0, 0.0

    def reset(self):
        self.t, self.x, self.v = 0, float(self.rng.uniform(-1, 1)), 0.0
        return np.array([self.x, self.v, 0.5 - self.x], dtype=np.float32)

    def step(self, action):
        self.t += 1
        self.v = 0.8 * self.v + 0.2 * float(np.clip(action[0], -1, 1))
        self.x += 0.1 * self.v
        obs = np.array([self.x, self.v, 0.5 - self.x], dtype=np.float32)
        return obs, -(self.x - 0.5) ** 2, self.t >= 10


class ReplayBuffer(object):
    def __init__(self, state_dim, action_dim, max_size=int(1e6)):
        self.max_size, self.ptr, self.size = max_size, 0, 0
        self.state = np.zeros((max_size, state_dim))
        self.action = np.zeros((max_size, action_dim))
        self.next_state = np.zeros((max_size, state_dim))
        self.reward = np.zeros((max_size, 1))
        self.not_done = np.zeros((max_size, 1))

    def add(self, state, action, next_state, reward, done):
        self.state[self.ptr] = state
        self.action[self.ptr] = action
        self.next_state[self.ptr] = next_state
        self.reward[self.ptr] = reward
        self.not_done[self.ptr] = 1. - done
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample(self, batch_size):
        ind = np.random.randint(0, self.size, size=batch_size)
        return (
            torch.FloatTensor(self.state[ind]).to(device),
            torch.FloatTensor(self.action[ind]).to(device),
            torch.FloatTensor(self.next_state[ind]).to(device),
            torch.FloatTensor(self.reward[ind]).to(device),
            torch.FloatTensor(self.not_done[ind]).to(device),
        )


# ---- TD3 ---------------------------------------------------------------------------------
class Actor(nn.Module):
    def __init__(self, state_dim, action_dim, max_action):
        super(Actor, self).__init__()
        self.l1 = nn.Linear(state_dim, 16)
        self.l2 = nn.Linear(16, 16)
        self.l3 = nn.Linear(16, action_dim)
        self.max_action = max_action

    def forward(self, state):
        a = F.relu(self.l1(state))
        a = F.relu(self.l2(a))
        return self.max_action * torch.tanh(self.l3(a))


class Critic(nn.Module):
    def __init__(self, state_dim, action_dim):
        super(Critic, self).__init__()
        self.l1 = nn.Linear(state_dim + action_dim, 16)  # Q1
        self.l2 = nn.Linear(16, 16)
        self.l3 = nn.Linear(16, 1)
        self.l4 = nn.Linear(state_dim + action_dim, 16)  # Q2
        self.l5 = nn.Linear(16, 16)
        self.l6 = nn.Linear(16, 1)

    def forward(self, state, action):
        sa = torch.cat([state, action], 1)
        q1 = self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))
        q2 = self.l6(F.relu(self.l5(F.relu(self.l4(sa)))))
        return q1, q2

    def Q1(self, state, action):
        sa = torch.cat([state, action], 1)
        return self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))


class TD3(object):
    def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005,
                 policy_noise=0.2, noise_clip=0.5, policy_freq=2):
        self.actor = Actor(state_dim, action_dim, max_action).to(device)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-3)
        self.critic = Critic(state_dim, action_dim).to(device)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-3)
        self.max_action, self.discount, self.tau = max_action, discount, tau
        self.policy_noise, self.noise_clip, self.policy_freq = policy_noise, noise_clip, policy_freq
        self.total_it = 0

    def select_action(self, state):
        state = torch.FloatTensor(state.reshape(1, -1)).to(device)
        return self.actor(state).cpu().data.numpy().flatten()

    def train(self, replay_buffer, batch_size=256):
        self.total_it += 1
        state, action, next_state, reward, not_done = replay_buffer.sample(batch_size)
        with torch.no_grad():
            noise = (torch.randn_like(action) * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
            next_action = (self.actor_target(next_state) + noise).clamp(-self.max_action, self.max_action)
            target_Q1, target_Q2 = self.critic_target(next_state, next_action)
            target_Q = torch.min(target_Q1, target_Q2)
            target_Q = reward + not_done * self.discount * target_Q
        current_Q1, current_Q2 = self.critic(state, action)
        critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()
        actor_loss = None
        if self.total_it % self.policy_freq == 0:  # delayed policy update
            actor_loss = -self.critic.Q1(state, self.actor(state)).mean()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
            for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
        return critic_loss.item(), None if actor_loss is None else actor_loss.item()

    def save(self, filename):
        torch.save(self.critic.state_dict(), filename + "_critic")
        torch.save(self.critic_optimizer.state_dict(), filename + "_critic_optimizer")
        torch.save(self.actor.state_dict(), filename + "_actor")
        torch.save(self.actor_optimizer.state_dict(), filename + "_actor_optimizer")

    def load(self, filename):
        self.critic.load_state_dict(torch.load(filename + "_critic"))
        self.critic_optimizer.load_state_dict(torch.load(filename + "_critic_optimizer"))
        self.critic_target = copy.deepcopy(self.critic)
        self.actor.load_state_dict(torch.load(filename + "_actor"))
        self.actor_optimizer.load_state_dict(torch.load(filename + "_actor_optimizer"))
        self.actor_target = copy.deepcopy(self.actor)


# ---- DDPG (one critic, every step) -------------------------------------------------------
class DDPGCritic(nn.Module):
    def __init__(self, state_dim, action_dim):
        super(DDPGCritic, self).__init__()
        self.l1 = nn.Linear(state_dim, 16)
        self.l2 = nn.Linear(16 + action_dim, 16)
        self.l3 = nn.Linear(16, 1)

    def forward(self, state, action):
        q = F.relu(self.l1(state))
        q = F.relu(self.l2(torch.cat([q, action], 1)))
        return self.l3(q)


class DDPG(object):
    def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005):
        self.actor = Actor(state_dim, action_dim, max_action).to(device)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=1e-3)
        self.critic = DDPGCritic(state_dim, action_dim).to(device)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), weight_decay=1e-2)
        self.discount, self.tau = discount, tau

    def select_action(self, state):
        state = torch.FloatTensor(state.reshape(1, -1)).to(device)
        return self.actor(state).cpu().data.numpy().flatten()

    def train(self, replay_buffer, batch_size=64):
        state, action, next_state, reward, not_done = replay_buffer.sample(batch_size)
        target_Q = self.critic_target(next_state, self.actor_target(next_state))
        target_Q = reward + (not_done * self.discount * target_Q).detach()
        current_Q = self.critic(state, action)
        critic_loss = F.mse_loss(current_Q, target_Q)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()
        actor_loss = -self.critic(state, self.actor(state)).mean()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()
        for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
            target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
        for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
            target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
        return critic_loss.item(), actor_loss.item()

    save = TD3.save
    load = TD3.load


def eval_policy(policy, seed, eval_episodes=2):
    eval_env = Slider(seed + 100)
    avg_reward = 0.
    for _ in range(eval_episodes):
        state, done = eval_env.reset(), False
        while not done:
            action = policy.select_action(np.array(state))
            state, reward, done = eval_env.step(action)
            avg_reward += reward
    avg_reward /= eval_episodes
    print(f"Evaluation over {eval_episodes} episodes: {avg_reward:.6f}")
    return avg_reward


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", default="TD3")
    parser.add_argument("--seed", default=0, type=int)
    parser.add_argument("--start_timesteps", default=12, type=int)
    parser.add_argument("--eval_freq", default=20, type=int)
    parser.add_argument("--max_timesteps", default=40, type=int)
    parser.add_argument("--expl_noise", default=0.1, type=float)
    parser.add_argument("--batch_size", default=8, type=int)
    parser.add_argument("--save_model", action="store_true")
    args = parser.parse_args(argv)
    file_name = f"{args.policy}_Slider_{args.seed}"
    print(f"Policy: {args.policy}, Env: Slider, Seed: {args.seed}")
    os.makedirs("./models", exist_ok=True)

    env = Slider(args.seed)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    state_dim, action_dim, max_action = 3, 1, float(Slider.max_action)
    if args.policy == "TD3":
        policy = TD3(state_dim, action_dim, max_action, policy_noise=0.2 * max_action,
                     noise_clip=0.5 * max_action, policy_freq=2)
    else:
        policy = DDPG(state_dim, action_dim, max_action)
    replay_buffer = ReplayBuffer(state_dim, action_dim, max_size=1000)
    evaluations = [eval_policy(policy, args.seed)]

    state, done = env.reset(), False
    episode_reward, episode_timesteps, episode_num, log = 0, 0, 0, []
    for t in range(args.max_timesteps):
        episode_timesteps += 1
        if t < args.start_timesteps:
            action = np.random.uniform(-max_action, max_action, size=action_dim)
        else:
            action = (policy.select_action(np.array(state))
                      + np.random.normal(0, max_action * args.expl_noise, size=action_dim)
                      ).clip(-max_action, max_action)
        next_state, reward, done = env.step(action)
        replay_buffer.add(state, action, next_state, reward, float(done))
        state = next_state
        episode_reward += reward
        if t >= args.start_timesteps:
            losses = policy.train(replay_buffer, args.batch_size)
            log.append(losses)
            print(f"t={t + 1} critic {losses[0]:.6f} actor " + ("-" if losses[1] is None else f"{losses[1]:.6f}"))
        if done:
            print(f"Total T: {t + 1} Episode Num: {episode_num + 1} Episode T: {episode_timesteps} Reward: {episode_reward:.6f}")
            state, done = env.reset(), False
            episode_reward, episode_timesteps = 0, 0
            episode_num += 1
        if (t + 1) % args.eval_freq == 0:
            evaluations.append(eval_policy(policy, args.seed))
            np.save(f"./models/{file_name}_evals", evaluations)
            if args.save_model:
                policy.save(f"./models/{file_name}")
    if args.save_model:
        policy.load(f"./models/{file_name}")
        print("reloaded actor:", policy.actor)
    return policy, log


if __name__ == "__main__":
    main()
