"""Random number generation: ``Generator``, ``manual_seed``, and the default generator.

A ``Generator`` wraps NumPy's PCG64 bit generator. Its state is a small uint8 array (so a
checkpoint can store it as a tensor) and restoring it replays the same stream, which is
what resuming a run and activation-checkpoint recomputation rely on.

Seeds follow PyTorch: a ``Generator()`` the program makes starts from PyTorch's fixed
default seed 67280421310721, while the default generator (``shardflow.rand``, layer
initialisation, dropout, shuffling) starts from a fresh seed drawn from the operating
system's entropy in every process, so an unseeded program varies from run to run and
``initial_seed()`` reports the seed drawn; ``manual_seed(s)`` makes it repeat. The draw
happens at the generator's first use, not at import.
"""

from __future__ import annotations

import json

import numpy as np


class Generator:
    """``shardflow.Generator()``; ``manual_seed(s)`` returns self, like PyTorch's."""

    def __init__(self, device="cpu"):
        self.manual_seed(67280421310721)  # PyTorch's seed for a new Generator

    @classmethod
    def _from_entropy(cls) -> Generator:
        """A generator seeded from OS entropy at its first use (the default generator)."""
        g = cls.__new__(cls)
        g._seed = g._rng = None
        return g

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy % (2**63))
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        if self._rng is None:
            self.seed()
        return self._seed

    @property
    def numpy(self) -> np.random.Generator:
        rng = self._rng
        if rng is None:
            self.seed()
            rng = self._rng
        return rng

    def get_state(self) -> np.ndarray:
        state = {"seed": self.initial_seed(), "bit_generator": self.numpy.bit_generator.state}
        return np.frombuffer(json.dumps(state).encode(), dtype=np.uint8).copy()

    def set_state(self, state) -> Generator:
        arr = np.asarray(state.numpy() if hasattr(state, "numpy") else state, dtype=np.uint8)
        try:
            d = json.loads(arr.tobytes().decode())
            self._seed = d["seed"]
            bg = np.random.PCG64()
            bg.state = d["bit_generator"]
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"not a shardflow RNG state ({e}); pass what get_state() returned") from None
        self._rng = np.random.Generator(bg)
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


def rng(generator: Generator | None = None) -> np.random.Generator:
    return (generator or default_generator).numpy
