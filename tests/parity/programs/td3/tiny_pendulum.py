"""A stand-in for ``gym`` 0.x (not installed here) for sfujim/TD3's ``main.py``: ``make(name)``
gives gym's ``Pendulum-v0`` dynamics, observation ``[cos th, sin th, thdot]``, reward and
``Box`` spaces, with gym 0.x's API (``seed(s)``, ``reset()`` -> obs, ``step(a)`` -> ``(obs,
reward, done, info)``, ``_max_episode_steps``, the ``TimeLimit`` ending an episode there),
episodes shortened from 200 to ``MAX_EPISODE_STEPS`` steps for test time. NumPy only, so
torch's and shardflow's runs see the same episodes for the same actions."""

from types import SimpleNamespace

import numpy as np

MAX_EPISODE_STEPS = 20


class Box:
    """gym's ``Box``: ``low``/``high``/``shape`` and a uniform float32 ``sample()`` from its
    own generator, which ``seed(seed)`` reseeds."""

    def __init__(self, low, high):
        self.low, self.high = np.asarray(low, np.float32), np.asarray(high, np.float32)
        self.shape = self.low.shape
        self.np_random = np.random.default_rng()

    def seed(self, seed=None):
        self.np_random = np.random.default_rng(seed)
        return [seed]

    def sample(self):
        return self.np_random.uniform(self.low, self.high).astype(np.float32)


class PendulumEnv:
    max_speed, max_torque, dt, g, m, l = 8.0, 2.0, 0.05, 10.0, 1.0, 1.0

    def __init__(self, name):
        self.spec = SimpleNamespace(id=name, max_episode_steps=MAX_EPISODE_STEPS)
        self._max_episode_steps = MAX_EPISODE_STEPS
        self.action_space = Box([-self.max_torque], [self.max_torque])
        high = np.array([1.0, 1.0, self.max_speed], np.float32)
        self.observation_space = Box(-high, high)
        self.np_random = np.random.default_rng()
        self.state, self._elapsed = None, 0

    def seed(self, seed=None):
        self.np_random = np.random.default_rng(seed)
        return [seed]

    def reset(self):
        high = np.array([np.pi, 1.0])
        self.state = self.np_random.uniform(low=-high, high=high)
        self._elapsed = 0
        return self._obs()

    def _obs(self):
        th, thdot = self.state
        return np.array([np.cos(th), np.sin(th), thdot], dtype=np.float32)

    def step(self, u):
        th, thdot = self.state
        u = np.clip(u, -self.max_torque, self.max_torque)[0]
        angle = ((th + np.pi) % (2 * np.pi)) - np.pi
        costs = angle ** 2 + 0.1 * thdot ** 2 + 0.001 * (u ** 2)
        newthdot = thdot + (3 * self.g / (2 * self.l) * np.sin(th) + 3.0 / (self.m * self.l ** 2) * u) * self.dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        newth = th + newthdot * self.dt
        self.state = np.array([newth, newthdot])
        self._elapsed += 1
        return self._obs(), -costs, self._elapsed >= self._max_episode_steps, {}


def make(name):
    return PendulumEnv(name)
