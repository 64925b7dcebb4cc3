"""Fused CuPy kernels for the GPU: one launch where the array-module path launches 7-15.

On a GPU the NumPy-style code of an op runs each ufunc as its own kernel, with a few µs of
Python and launch cost each and a full pass over memory: AdamW's update is about 12 launches
per parameter, GELU's backward 15 (docs/GPU.md, "where the GPU time goes"). These
``cupy.ElementwiseKernel`` s do the same arithmetic in one pass per element:

| kernel | replaces |
|---|---|
| ``adam_update`` | ``optim/adam.py``'s ``_adam_update`` (+ the L2/maximize gradient), amsgrad too |
| ``gelu_forward`` / ``gelu_backward`` | ``ops/elementwise.py``'s GELU (exact erf and tanh) |

Who takes them: ``usable(*arrays)`` is true when the kernels are on (``SHARDFLOW_KERNELS``
other than ``numpy``), every array is a C-contiguous float32/float64 array of one dtype, and
the array module is CuPy with ``ElementwiseKernel`` (so never on NumPy arrays nor on the host
stand-in of ``tests/doubles``, which has no kernels). The formulas are those of the NumPy
path term for term; ``tests/gpu/test_cuda_kernels.py`` checks them against the CPU.
Kernels are built lazily, once per process (CuPy caches the compiled code on disk).
"""

from __future__ import annotations

import numpy as np

from .. import _config
from ..backend.xp import get_array_module

__all__ = ["usable", "adam_update", "gelu_forward", "gelu_backward"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BUILT: dict = {}

_ADAM = """
T gg = sign * g + l2 * param;
param = param * decay;
m = m + one_minus_b1 * (gg - m);
v = b2 * v + one_minus_b2 * gg * gg;
{amsgrad}
T denom = sqrt({second}) / bc2_sqrt + eps;
param = param - step_size * (m / denom);
"""

_GELU_TANH_FWD = "T t = tanh(x * ((T)C + (T)C * (T)A * x * x)); y = (T)0.5 * x * ((T)1 + t);"
_GELU_TANH_BWD = """
T t = tanh(x * ((T)C + (T)C * (T)A * x * x));
T k = (T)0.5 * (T)C * x * ((T)1 + (T)3 * (T)A * x * x);
gx = g * (k * ((T)1 - t * t) + (T)0.5 * (t + (T)1));
"""
_GELU_ERF_FWD = "y = x * (T)0.5 * ((T)1 + erf(x * (T)R));"
_GELU_ERF_BWD = "gx = g * ((T)0.5 * ((T)1 + erf(x * (T)R)) + x * exp((T)-0.5 * x * x) * (T)P);"
_GELU_DEFINES = {"C": "0.7978845608028654", "A": "0.044715", "R": "0.7071067811865476",
                 "P": "0.3989422804014327"}  # sqrt(2/pi), 0.044715, 1/sqrt(2), 1/sqrt(2 pi)


def usable(*arrays) -> bool:
    """True when the fused CuPy kernels can run on these arrays (None entries skipped)."""
    a0 = arrays[0]
    if a0 is None or type(a0) is np.ndarray or a0.dtype not in _FLOATS:
        return False
    xp = get_array_module(a0)
    if xp is np or not hasattr(xp, "ElementwiseKernel"):
        return False
    for a in arrays:
        if a is None:
            continue
        if type(a) is not type(a0) or a.dtype != a0.dtype or not a.flags.c_contiguous:
            return False
    return _config.kernels_mode() != "numpy"


def _kernel(xp, name, in_params, out_params, body):
    k = _BUILT.get(name)
    if k is None:
        for key, value in _GELU_DEFINES.items():
            body = body.replace(f"(T){key}", f"(T){value}")
        k = _BUILT[name] = xp.ElementwiseKernel(in_params, out_params, body, f"shardflow_{name}")
    return k


def adam_update(x, g, m, v, vmax, *, maximize, l2, b1, b2, eps, bc1, bc2_sqrt, lr, decay) -> None:
    """One Adam(W) step in place on device arrays (the same arguments as the Numba kernel,
    ``kernels/optim.py``): ``decay`` is AdamW's ``1 - lr * wd``, ``l2`` Adam's penalty."""
    xp = get_array_module(x)
    scalars = "T sign, T l2, T decay, T one_minus_b1, T b2, T one_minus_b2, T bc2_sqrt, T eps, T step_size"
    args = (-1.0 if maximize else 1.0, l2, decay, 1.0 - b1, b2, 1.0 - b2, bc2_sqrt, eps, lr / bc1)
    if vmax is None:
        body = _ADAM.format(amsgrad="", second="v")
        _kernel(xp, "adam", "T g, " + scalars, "T param, T m, T v", body)(g, *args, x, m, v)
    else:
        body = _ADAM.format(amsgrad="vmax = max(vmax, v);", second="vmax")
        _kernel(xp, "adam_amsgrad", "T g, " + scalars, "T param, T m, T v, T vmax", body)(g, *args, x, m, v, vmax)


def gelu_forward(x, approximate: str):
    """GELU of a device array, one launch (``approximate``: ``'none'`` or ``'tanh'``)."""
    xp = get_array_module(x)
    if approximate == "tanh":
        return _kernel(xp, "gelu_tanh_fwd", "T x", "T y", _GELU_TANH_FWD)(x)
    return _kernel(xp, "gelu_erf_fwd", "T x", "T y", _GELU_ERF_FWD)(x)


def gelu_backward(x, g, approximate: str):
    """GELU's input gradient ``g * gelu'(x)``, one launch."""
    xp = get_array_module(x)
    if approximate == "tanh":
        return _kernel(xp, "gelu_tanh_bwd", "T x, T g", "T gx", _GELU_TANH_BWD)(x, g)
    return _kernel(xp, "gelu_erf_bwd", "T x, T g", "T gx", _GELU_ERF_BWD)(x, g)
