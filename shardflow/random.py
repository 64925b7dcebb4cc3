"""``torch.random``: the default generator's functions and ``fork_rng``.

``manual_seed``, ``seed``, ``initial_seed``, ``get_rng_state``, ``set_rng_state`` and
``default_generator`` are shardflow's one generator (``backend/random.py``), the same
objects as ``shardflow.manual_seed`` etc.; ``get_rng_state`` returns torch's uint8 tensor. ``fork_rng(devices=None, enabled=True,
device_type="cuda")`` saves the generator's state on entry and restores it on exit, so
draws inside the block do not change what the program draws after it. shardflow has one
generator for every device (docs/COMPAT.md, devices), so ``devices`` has nothing more to
save; it is accepted, checked to be an iterable of device indices, and otherwise unused.
``enabled=False`` makes the block a no-op, as in torch.
"""

from __future__ import annotations

import contextlib

from .autograd import Tensor
from .backend import random as _random
from .backend.random import (
    Generator,
    default_generator,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
           "default_generator", "Generator"]


def get_rng_state() -> Tensor:
    """``torch.get_rng_state()``: the default generator's state, a uint8 tensor of torch's 5056
    bytes (``set_rng_state`` takes it back; so does torch's). ``Generator.get_state()`` gives
    the same bytes as a NumPy array (the generator lives in the backend layer, below Tensor)."""
    return Tensor(_random.get_rng_state())


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda"):
    """Restore the random state on exit from the block (module docstring)."""
    if device_type == "meta" or not enabled:
        yield
        return
    if devices is not None:
        devices = list(devices)  # torch's check: an iterable (of device indices)
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
