"""Fused CPU kernels (Numba) for the hot eager ops, with the NumPy path as the fallback.

Each kernel is one pass (or two) over the data with the rows split across cores
(``prange``), where the NumPy path makes several full passes of ufuncs. Families, one file
each:

| file | kernels |
|---|---|
| ``layer_norm.py`` | LayerNorm forward (mean, rstd, affine) and backward (gx, gw, gb) |
| ``softmax.py`` | softmax / log_softmax forward and backward over the last dim, cross-entropy
  (class indices) forward and backward, attention's in-place masked softmax and its backward |
| ``gelu.py`` | GELU (exact erf and tanh) forward and backward |
| ``optim.py`` | Adam / AdamW and SGD (momentum, Nesterov) parameter updates, in place |
| ``box_muller.py`` | torch's float32 Box-Muller (avx_mathfun's log and sincos) for large ``randn``/``normal_``, the NumPy path's bits |
| ``scan.py`` | ``cumsum`` along any axis and its reversed scan (the backward), NumPy's running sums bit for bit |
| ``topk.py`` | ``topk`` of a few along the last axis in one pass per row, for rows whose answer is unique (ties and NaN go back to argpartition) |
| ``shuffle.py`` | ``randperm``'s swap loop over torch's ``random()`` outputs (from 2^14 elements) |
| ``_math.py`` | vectorisable float32 ``tanh`` / ``erf`` / ``exp`` (no libm call per element) |
| ``_numba.py`` | the lazy numba adapter: ``@kernel``, ``@helper``, threads, fork guard, report |
| ``cuda.py`` | the GPU's: AdamW/Adam, GELU and LayerNorm as fused CuPy kernels (its own ``usable``) |

Who takes them: an op calls ``usable(*arrays)``; it is true when the mode allows kernels
(``SHARDFLOW_KERNELS``: ``auto`` default, ``numba``, ``numpy``), numba imports, and every
array is a C-contiguous NumPy float32/float64 array of one dtype. Anything else (CuPy, half
precision, strided views, numba missing) runs the op's NumPy code, which stays the
reference: ``tests/kernels`` run every kernel against it.

Compilation is lazy (first call, per dtype) and cached on disk by numba (``cache=True``);
``compile_report()`` lists what was compiled or loaded and how long it took. docs/KERNELS.md
has the design, figures and how to add a kernel.
"""

from __future__ import annotations

import numpy as np

from .. import _config
from ._numba import available, compile_report, num_threads, require

__all__ = ["usable", "enabled", "available", "compile_report", "num_threads", "format_compile_report"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def enabled() -> bool:
    """Whether the kernels are switched on (mode and numba). ``SHARDFLOW_KERNELS=numba``
    without numba raises ImportError with the install command."""
    mode = _config.kernels_mode()
    if mode == "numpy":
        return False
    if mode == "numba":
        require()
        return True
    return available()


def usable(*arrays) -> bool:
    """True when the kernels are on and every array is a C-contiguous NumPy float32/float64
    array of the first array's dtype (None entries are skipped)."""
    a0 = arrays[0]
    if type(a0) is not np.ndarray or a0.dtype not in _FLOATS:
        return False
    dt = a0.dtype
    for a in arrays:
        if a is None:
            continue
        if type(a) is not np.ndarray or a.dtype != dt or not a.flags.c_contiguous:
            return False
    return enabled()


def format_compile_report() -> str:
    """The compile report as text lines (empty string when nothing was compiled)."""
    rows = compile_report()
    if not rows:
        return ""
    total = sum(r["seconds"] for r in rows)
    lines = [f"kernels: {len(rows)} specialisations, {total:.2f} s "
             f"({sum(r['source'] == 'compiled' for r in rows)} compiled, "
             f"{sum(r['source'] == 'disk cache' for r in rows)} from the disk cache)"]
    for r in rows:
        lines.append(f"  {r['kernel']:<28} {r['dtype']:<8} {r['ndim']}d  {r['seconds']:6.2f} s  {r['source']}")
    return "\n".join(lines)
