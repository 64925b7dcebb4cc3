"""``torch.backends.cpu.get_cpu_capability()``: the widest vector instruction set of this CPU
that the kernels use, in torch's words (``"AVX512"``, ``"AVX2"``, ``"DEFAULT"``), read from
NumPy's runtime CPU-feature detection (NumPy dispatches its own loops by the same features)."""

from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # NumPy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as features
    # torch's x86 levels: AVX512 needs the SKX set (F, CD, BW, DQ, VL); AVX2 needs AVX2 and FMA
    if all(features.get(f) for f in ("AVX512F", "AVX512CD", "AVX512BW", "AVX512DQ", "AVX512VL")):
        return "AVX512"
    if features.get("AVX2") and features.get("FMA3"):
        return "AVX2"
    return "DEFAULT"
