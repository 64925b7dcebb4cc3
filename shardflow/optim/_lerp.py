"""``torch.lerp``'s two-branch formula, in place on arrays, shared by the optimizers whose
interpolation weight can be 0.5 or more (Adafactor's ``t ** beta2_decay``)."""

from __future__ import annotations

import numpy as np


def lerp_(start, end, weight: float, tmp) -> None:
    """``start = start + weight * (end - start)`` as PyTorch computes it: for ``weight >=
    0.5`` the form ``end - (end - start) * (1 - weight)``, exact at ``weight = 1``."""
    np.subtract(end, start, out=tmp)
    if weight < 0.5:
        tmp *= weight
        start += tmp
    else:
        tmp *= 1 - weight
        np.subtract(end, tmp, out=start)
