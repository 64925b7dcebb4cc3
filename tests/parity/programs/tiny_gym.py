"""A stand-in for ``gym`` (not installed here, and its environments are not the point):
``make('CartPole-v1')`` gives gym's CartPole with the same dynamics, observation, reward,
termination (and truncation at 500 steps), the ``reset(seed=...)`` -> ``(obs, info)`` and
``step(action)`` -> ``(obs, reward, terminated, truncated, info)`` API and
``spec.reward_threshold``; the start state comes from a NumPy generator seeded by reset;
``action_space`` is gym's ``Discrete(2)`` (``n``, ``sample()`` from its own generator,
``seed(seed)``).
Framework-free (NumPy only), so torch's and shardflow's runs of a program see the same
episodes for the same actions."""

import math
from types import SimpleNamespace

import numpy as np


class Discrete:
    """gym's ``Discrete(n)`` action space: ``n`` and a uniform ``sample()`` from its own
    generator, which ``seed(seed)`` reseeds (as gym's ``action_space.seed``)."""

    def __init__(self, n, seed=None):
        self.n = n
        self.np_random = np.random.default_rng(seed)

    def seed(self, seed=None):
        self.np_random = np.random.default_rng(seed)
        return [seed]

    def sample(self):
        return int(self.np_random.integers(self.n))


class CartPoleEnv:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4
    max_episode_steps = 500

    def __init__(self):
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length
        self.spec = SimpleNamespace(id="CartPole-v1", reward_threshold=475.0,
                                    max_episode_steps=self.max_episode_steps)
        self.np_random = np.random.default_rng()
        self.action_space = Discrete(2)
        self.state = None
        self.steps = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.state = self.np_random.uniform(low=-0.05, high=0.05, size=(4,))
        self.steps = 0
        return np.array(self.state, dtype=np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        self.steps += 1
        terminated = bool(x < -self.x_threshold or x > self.x_threshold
                          or theta < -self.theta_threshold_radians
                          or theta > self.theta_threshold_radians)
        truncated = self.steps >= self.max_episode_steps
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated, {}

    def render(self):
        pass


def make(env_id):
    if env_id != "CartPole-v1":
        raise ValueError(f"tiny_gym only has CartPole-v1, not {env_id!r}")
    return CartPoleEnv()
