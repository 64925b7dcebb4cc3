"""Random number generation: ``Generator``, ``manual_seed``, and the default generator.

A ``Generator`` is torch's CPU generator: the 32-bit Mersenne Twister seeded as torch seeds it
(NumPy's ``MT19937`` bit generator holding torch's state) plus torch's cached second normal
value, so ``manual_seed(s)`` followed by the same calls draws the same numbers as torch
(``backend/random_stream.py`` has the distributions). Its state is torch's 5056-byte uint8
layout (a checkpoint stores it as a tensor; torch's and shardflow's restore in each other) and
restoring it replays the same stream, which resuming a run and activation-checkpoint
recomputation rely on. ``numpy`` is a NumPy ``Generator`` on the
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

import numpy as np

from .device import device
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

    @property
    def device(self):
        """The generator's device (torch's attribute): CPU; shardflow has one generator for
        every device (docs/COMPAT.md, devices)."""
        return device("cpu")

    def clone_state(self) -> Generator:
        """A new generator holding a copy of this one's state (torch's ``clone_state``)."""
        g = type(self)._from_entropy()  # unseeded until the state is set
        if self._mt is not None:
            g.set_state(self.get_state())
        return g

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
        """torch's 5056-byte CPU generator state (``CPUGeneratorImplState``): the seed, the
        twister's ``left``/``next``/624 words, the cached normal value; so a state saved by
        either framework restores in the other."""
        st = self.mt.state["state"]
        key, pos = np.asarray(st["key"], dtype=np.uint64), int(st["pos"])
        out = np.zeros(_STATE_BYTES, dtype=np.uint8)
        head = np.zeros(3, dtype=np.uint64)
        head[0] = self._seed
        if pos == 624:  # torch twists on the next draw: left == 1 (next 0 right after seeding)
            fresh = np.array_equal(key, seeded_state(self._seed)["state"]["key"].astype(np.uint64))
            left, nxt = 1, 0 if fresh else 624
        else:
            left, nxt = 625 - pos, pos
        head[1] = np.uint64(left) | (np.uint64(1) << np.uint64(32))  # int left; int seeded = 1
        head[2] = nxt
        out[:24] = head.view(np.uint8)
        out[24:24 + 624 * 8] = key.view(np.uint8)
        if self.normal_cache is not None:
            out[5024:5032] = np.array([self.normal_cache], dtype=np.float64).view(np.uint8)  # normal_y
            out[5040] = 1  # normal_is_valid
        return out

    def set_state(self, state) -> Generator:
        """Restore what :meth:`get_state` (or torch's ``get_rng_state``) returned."""
        arr = np.asarray(state.numpy() if hasattr(state, "numpy") else state, dtype=np.uint8).reshape(-1)
        if arr.size != _STATE_BYTES:
            raise ValueError(f"not a CPU RNG state: expected {_STATE_BYTES} bytes (what get_rng_state() "
                             f"returns), got {arr.size}; pass the tensor get_rng_state() gave")
        head = arr[:24].copy().view(np.uint64)
        left = int(head[1] & np.uint64(0xFFFFFFFF))
        nxt = int(head[2])
        key = arr[24:24 + 624 * 8].copy().view(np.uint64)
        if not 1 <= left <= 625 or nxt > 624 or np.any(key > 0xFFFFFFFF):
            raise ValueError("not a CPU RNG state: its twister fields are out of range; pass the "
                             "tensor get_rng_state() gave")
        mt = np.random.MT19937()
        mt.state = {"bit_generator": "MT19937",
                    "state": {"key": key.astype(np.uint32), "pos": 624 if left == 1 else nxt}}
        self._seed, self._mt = int(head[0]), mt
        self.normal_cache = float(arr[5024:5032].copy().view(np.float64)[0]) if arr[5040] else None
        self._rng = np.random.Generator(mt)
        return self


_STATE_BYTES = 5056  # sizeof(CPUGeneratorImplState) in torch


default_generator = Generator._from_entropy()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator. NumPy's global generator is left alone, as torch leaves
    it: a program seeding NumPy and torch with different seeds draws NumPy's own values."""
    default_generator.manual_seed(seed)
    return default_generator


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> np.ndarray:
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


def get(generator: Generator | None = None) -> Generator:
    """``generator``, or the default one: the argument of ``backend/random_stream.py``'s draws."""
    return generator or default_generator


def rng(generator: Generator | None = None) -> np.random.Generator:
    return (generator or default_generator).numpy
