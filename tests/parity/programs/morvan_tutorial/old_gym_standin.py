"""``gym`` as the 2017 tutorials used it (gym 0.8), over ``tiny_gym``'s CartPole (gym's
dynamics, NumPy only): ``gym.make('CartPole-v0').unwrapped`` with ``reset()`` returning the
observation alone, ``step(a)`` returning ``(obs, reward, done, info)``, ``render()`` a no-op,
``observation_space.shape``, ``x_threshold`` / ``theta_threshold_radians``. The start
states come from a NumPy generator seeded ``seed`` once (both runs of a program see the same
episodes for the same actions); ``unwrapped`` has no time limit, as in gym."""

from __future__ import annotations

import types

from .. import tiny_gym


class OldCartPole:
    """CartPole with gym 0.8's API."""

    def __init__(self, seed: int):
        self._env = tiny_gym.make("CartPole-v1")
        self._env.max_episode_steps = float("inf")  # unwrapped: no TimeLimit
        self._env.reset(seed=seed)
        self._env.action_space.seed(seed)
        self.action_space = self._env.action_space
        self.observation_space = types.SimpleNamespace(shape=(4,))
        self.x_threshold = self._env.x_threshold
        self.theta_threshold_radians = self._env.theta_threshold_radians

    @property
    def unwrapped(self):
        return self

    def reset(self):
        return self._env.reset()[0]  # the generator seeded once, at make

    def step(self, action):
        obs, reward, terminated, _, info = self._env.step(action)
        return obs, reward, terminated, info

    def render(self):
        pass


def gym_module(seed: int = 0) -> types.ModuleType:
    """A ``gym`` module whose ``make('CartPole-v0')`` is :class:`OldCartPole`."""
    gym = types.ModuleType("gym")

    def make(env_id):
        if env_id != "CartPole-v0":
            raise ValueError(f"the gym stand-in has CartPole-v0 only, not {env_id!r}")
        return OldCartPole(seed)

    gym.make = make
    return gym
