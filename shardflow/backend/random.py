"""Random number generation: ``Generator``, ``manual_seed``, and the default generator.

A ``Generator`` is torch's CPU generator: the 32-bit Mersenne Twister seeded as torch seeds it
(NumPy's ``MT19937`` bit generator holding torch's state) plus torch's cached second normal
value, so ``manual_seed(s)`` followed by the same calls draws the same numbers as torch
(``backend/random_stream.py`` has the distributions). Its state is a small uint8 array (a
checkpoint stores it as a tensor) and restoring it replays the same stream, which resuming a
run and activation-checkpoint recomputation rely on. ``numpy`` is a NumPy ``Generator`` on the
same twister, for the draws torch has no counterpart of here (gamma, poisson, ...).

Seeds follow PyTorch: a ``Generator()`` the program makes starts from PyTorch's fixed
default seed 67280421310721, while the default generator (``shardflow.rand``, layer
initialisation, dropout, shuffling) starts from a fresh seed drawn from the operating
system's entropy in every process, so an unseeded program varies from run to run and
``initial_seed()`` reports the seed drawn; ``manual_seed(s)`` makes it repeat. The draw
happens at the generator's first use, not at import. Seeds are taken modulo 2^64, as
torch's (``manual_seed(-1)`` is 2^64 - 1).
"""

from __future__ import annotations

import json

import numpy as np

from .random_stream import seeded_state


class Generator:
    """``shardflow.Generator()``; ``manual_seed(s)`` returns self, like PyTorch's."""

    def __init__(self, device="cpu"):
        self.manual_seed(67280421310721)  # PyTorch's seed for a new Generator

    @classmethod
    def _from_entropy(cls) -> Generator:
        """A generator seeded from OS entropy at its first use (the default generator)."""
        g = cls.__new__(cls)
        g._seed = g._mt = g._rng = None
        g.normal_cache = None
        return g

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise ValueError(f"seed must be within [-2**63, 2**64), got {seed}")
        seed %= 2**64
        self._seed = seed
        self._mt = np.random.MT19937()
        self._mt.state = seeded_state(seed)
        self._rng = np.random.Generator(self._mt)
        self.normal_cache = None  # torch's next_double_normal_sample, reset by seeding
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy % (2**63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        if self._mt is None:
            self.seed()
        return self._seed

    @property
    def mt(self) -> np.random.MT19937:
        """The twister (torch's ``random()`` is ``mt.random_raw()``)."""
        if self._mt is None:
            self.seed()
        return self._mt

    @property
    def numpy(self) -> np.random.Generator:
        if self._mt is None:
            self.seed()
        return self._rng

    def get_state(self) -> np.ndarray:
        st = self.mt.state["state"]
        state = {"seed": self._seed, "key": st["key"].tolist(), "pos": int(st["pos"]),
                 "normal_cache": self.normal_cache}
        return np.frombuffer(json.dumps(state).encode(), dtype=np.uint8).copy()

    def set_state(self, state) -> Generator:
        arr = np.asarray(state.numpy() if hasattr(state, "numpy") else state, dtype=np.uint8)
        try:
            d = json.loads(arr.tobytes().decode())
            mt = np.random.MT19937()
            mt.state = {"bit_generator": "MT19937",
                        "state": {"key": np.asarray(d["key"], dtype=np.uint32), "pos": int(d["pos"])}}
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"not a shardflow RNG state ({e}); pass what get_state() returned") from None
        self._seed, self._mt, self.normal_cache = d["seed"], mt, d["normal_cache"]
        self._rng = np.random.Generator(mt)
        return self


default_generator = Generator._from_entropy()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (and NumPy's legacy global one, for user code using it)."""
    default_generator.manual_seed(seed)
    np.random.seed(int(seed) % (2**32))
    return default_generator


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> np.ndarray:
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)


def get(generator: Generator | None = None) -> Generator:
    """``generator``, or the default one: the argument of ``backend/random_stream.py``'s draws."""
    return generator or default_generator


def rng(generator: Generator | None = None) -> np.random.Generator:
    return (generator or default_generator).numpy
