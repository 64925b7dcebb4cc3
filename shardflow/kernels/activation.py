"""ReLU backward in one pass over flat C-contiguous arrays, elements split across cores:
``gx = g if y > 0 else 0`` -- a select, not ``g * (y > 0)``: an inf or NaN upstream gradient
at an inactive unit gives 0, as PyTorch's ``threshold_backward`` (the product gave NaN), and
the mask is never materialised (the NumPy path makes three passes: compare, cast, multiply).
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel, prange


@kernel
def _relu_bwd(g, y, gx):
    n = g.size
    for i in prange(n):
        gx[i] = 0 if y[i] <= 0 else g[i]  # NaN passes g, as torch's threshold_backward


def relu_backward(g, y):
    """``g`` (the upstream gradient) and ``y`` (ReLU's output), same shape and dtype."""
    gx = np.empty(y.shape, y.dtype)
    _relu_bwd(g.reshape(-1), y.reshape(-1), gx.reshape(-1))
    return gx
