"""torch's top-level build flags: ``has_lapack``, ``has_spectral``, ``has_mkl``,
``has_openmp`` and ``compiled_with_cxx11_abi()``.

Each answers for shardflow, consistently with ``shardflow.backends``: LAPACK (NumPy/SciPy's)
and the spectral ops (``shardflow.fft``) are there, so ``has_lapack``/``has_spectral`` are
True as in torch; ``has_mkl``/``has_openmp`` are ``backends.mkl.is_available()`` /
``backends.openmp.is_available()`` (False here, where torch's CPU wheel says True).
``compiled_with_cxx11_abi()`` is True as for torch 2.13's wheels (shardflow has no C++
build; the answer is what code choosing compiler flags for an extension expects).
"""

from __future__ import annotations

__all__ = ["has_lapack", "has_spectral", "has_mkl", "has_openmp", "compiled_with_cxx11_abi"]

has_lapack = True
has_spectral = True
# backends.mkl / backends.openmp's is_available() (those modules load lazily; a test ties them)
has_mkl = False
has_openmp = False


def compiled_with_cxx11_abi() -> bool:
    """Whether the build used ``_GLIBCXX_USE_CXX11_ABI=1`` (True, as torch 2.13's wheels)."""
    return True
