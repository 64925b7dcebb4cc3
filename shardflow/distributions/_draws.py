"""Host draws for the distributions whose samplers shardflow has no op for (Poisson,
Binomial): NumPy's ``poisson`` / ``binomial`` on the default generator's stream
(``shardflow.manual_seed`` repeats them; the values are not torch's stream), computed on the
host in float64 and returned in the parameter's dtype on its device, without a graph."""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..backend import CPU, to_device
from ..backend import random as _random
from ..ops import tensor

__all__ = ["poisson_draw", "binomial_draw"]


def _host(t: Tensor) -> np.ndarray:
    return np.asarray(to_device(t.detach().array, CPU), dtype=np.float64)


def _like(values: np.ndarray, t: Tensor) -> Tensor:
    return tensor(values, dtype=t.dtype, device=t.device)


def poisson_draw(rate: Tensor) -> Tensor:
    """One Poisson draw per element of ``rate`` (``torch.poisson``)."""
    return _like(_random.rng(None).poisson(_host(rate)).astype(np.float64), rate)


def binomial_draw(count: Tensor, probs: Tensor) -> Tensor:
    """One Binomial(count, probs) draw per element (``torch.binomial``); both have one shape."""
    n = np.rint(_host(count)).astype(np.int64)
    p = np.clip(_host(probs), 0.0, 1.0)
    return _like(_random.rng(None).binomial(n, p).astype(np.float64), probs)
