"""``torch.version`` path: the version strings programs print or compare. shardflow is built
without CUDA or ROCm libraries of its own (CUDA goes through CuPy), so ``cuda`` and ``hip`` are
None as in a CPU build of torch; ``git_version`` is the source revision (``"Unknown"``: the
package does not record one)."""

from typing import Optional  # noqa: F401 (torch.version exposes it)

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

__version__ = "0.1.0"
debug = False
cuda: Optional[str] = None  # noqa: UP045 (torch's annotation)
git_version = "Unknown"
hip: Optional[str] = None  # noqa: UP045
rocm: Optional[str] = None  # noqa: UP045
xpu: Optional[str] = None  # noqa: UP045
