"""``torch.cuda``'s RNG-state functions.

shardflow has one random generator for every device (``backend/random.py``): GPU tensors are
drawn from the same stream as CPU ones. So with a GPU, ``get_rng_state(device)`` is that
generator's state as a uint8 tensor (what ``shardflow.get_rng_state()`` holds) and
``set_rng_state`` restores it, which is what a program saving and restoring the CUDA state
(a checkpoint, a recomputed dropout) relies on: the draws after a restore repeat. Without
CUDA the answers are a CPU-only torch build's: ``get_rng_state()`` and ``initial_seed()`` raise
(``CudaNotAvailableError``, an ``AssertionError`` like torch's "Torch not compiled with CUDA
enabled", naming the fix), ``get_rng_state_all()`` is ``[]``, ``set_rng_state`` /
``set_rng_state_all`` do nothing (torch queues them for a CUDA start that never comes).
"""

from __future__ import annotations

from ..autograd import Tensor
from ..backend import random as _random
from ..backend.xp import cuda_is_available

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "initial_seed"]


def _check_device(device) -> None:
    from . import _index, _require, device_count

    _require("get_rng_state")
    idx = _index(device)
    if not 0 <= idx < device_count():
        raise RuntimeError(f"shardflow.cuda: device index {idx} is out of range: {device_count()} CUDA device(s)")


def get_rng_state(device="cuda") -> Tensor:
    """The generator state (uint8 tensor, on the CPU as torch returns it)."""
    _check_device(device)
    return Tensor(_random.get_rng_state())


def get_rng_state_all() -> list[Tensor]:
    from . import device_count

    return [get_rng_state(i) for i in range(device_count())] if cuda_is_available() else []


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a state ``get_rng_state`` returned (nothing to do without CUDA, as in torch)."""
    if not cuda_is_available():
        return None
    _check_device(device)
    _random.set_rng_state(new_state)
    return None


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def initial_seed() -> int:
    """The seed of the generator (raises without CUDA, as torch's CPU build)."""
    from . import _require

    _require("initial_seed")
    return _random.initial_seed()
