"""The policy-gradient code of PyTorch's examples (reinforce.py, actor_critic.py), written
once with the module as a parameter (``torch`` or ``shardflow``: what ``import shardflow as
torch`` gives a program): ``Categorical(probs).sample()`` / ``log_prob`` through an episode,
then the loss of the examples. shardflow picks the actions; torch replays them; the losses
and every parameter's gradient must agree."""

from collections import namedtuple

import numpy as np
import torch

import shardflow

SavedAction = namedtuple("SavedAction", ["log_prob", "value"])
GAMMA = 0.99


def _policy(torch):
    nn, F = torch.nn, torch.nn.functional

    class Policy(nn.Module):  # examples/reinforcement_learning/reinforce.py (dropout off)
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 16)
            self.affine2 = nn.Linear(16, 2)
            self.saved_log_probs = []
            self.rewards = []

        def forward(self, x):
            x = F.relu(self.affine1(x))
            return F.softmax(self.affine2(x), dim=1)

    return Policy()


def _actor_critic(torch):
    nn, F = torch.nn, torch.nn.functional

    class Policy(nn.Module):  # examples/reinforcement_learning/actor_critic.py
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 16)
            self.action_head = nn.Linear(16, 2)
            self.value_head = nn.Linear(16, 1)
            self.saved_actions = []
            self.rewards = []

        def forward(self, x):
            x = F.relu(self.affine1(x))
            return F.softmax(self.action_head(x), dim=-1), self.value_head(x)

    return Policy()


def _copy_weights(src, dst):
    for (n, p), (m, q) in zip(src.named_parameters(), dst.named_parameters()):
        assert n == m
        with torch.no_grad():
            q.copy_(torch.tensor(p.detach().numpy()))


def _reinforce(torch, policy, states, rewards, actions=None):
    Categorical = torch.distributions.Categorical  # the examples: from torch.distributions import Categorical

    eps = np.finfo(np.float32).eps.item()
    taken = []
    for t, state in enumerate(states):
        state = torch.from_numpy(state).float().unsqueeze(0)
        probs = policy(state)
        m = Categorical(probs)
        action = m.sample() if actions is None else torch.tensor([actions[t]])
        policy.saved_log_probs.append(m.log_prob(action))
        taken.append(action.item())
        policy.rewards.append(rewards[t])
    R, returns = 0, []
    for r in policy.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = [-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns)]
    loss = torch.cat(policy_loss).sum()
    loss.backward()
    return taken, loss.item()


def _actor_critic_episode(torch, model, states, rewards, actions=None):
    Categorical = torch.distributions.Categorical  # the examples: from torch.distributions import Categorical

    F = torch.nn.functional
    eps = np.finfo(np.float32).eps.item()
    taken = []
    for t, state in enumerate(states):
        state = torch.from_numpy(state).float()
        probs, state_value = model(state)
        m = Categorical(probs)
        action = m.sample() if actions is None else torch.tensor(actions[t])
        model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
        taken.append(action.item())
        model.rewards.append(rewards[t])
    R, policy_losses, value_losses, returns = 0, [], [], []
    for r in model.rewards[::-1]:
        R = r + GAMMA * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(model.saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    return taken, loss.item()


def _run(make, episode):
    rng = np.random.default_rng(0)
    states = [rng.standard_normal(4) for _ in range(12)]
    rewards = list(rng.uniform(0, 1, 12))
    shardflow.manual_seed(0)
    sf_model = make(shardflow)
    th_model = make(torch)
    _copy_weights(sf_model, th_model)
    actions, sf_loss = episode(shardflow, sf_model, states, rewards)
    assert set(actions) <= {0, 1}
    _, th_loss = episode(torch, th_model, states, rewards, actions)
    np.testing.assert_allclose(sf_loss, th_loss, rtol=1e-5, atol=1e-6)
    for (n, p), (_, q) in zip(sf_model.named_parameters(), th_model.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)


def test_reinforce_example_matches_torch():
    _run(_policy, _reinforce)


def test_actor_critic_example_matches_torch():
    _run(_actor_critic, _actor_critic_episode)


def test_categorical_sample_follows_probs_through_the_example_pattern():
    shardflow.manual_seed(3)
    probs = shardflow.tensor([[0.9, 0.1]])
    m = shardflow.distributions.Categorical(probs)
    draws = [m.sample().item() for _ in range(400)]
    # 400 draws of p = 0.1: 40 expected, standard deviation 6: allow 5 of them
    assert abs(sum(draws) - 40) <= 30
