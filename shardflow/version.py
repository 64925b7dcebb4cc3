"""``torch.version`` path: the version strings programs print or compare; ``__version__`` is
the PyTorch version whose API shardflow implements, with shardflow's as its local label
(``torch_version.py``). shardflow is built
without CUDA or ROCm libraries of its own (CUDA goes through CuPy), so ``cuda`` and ``hip`` are
None as in a CPU build of torch; ``git_version`` is the source revision (``"Unknown"``: the
package does not record one)."""

from typing import Optional  # noqa: F401 (torch.version exposes it)

from .torch_version import TorchVersion

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu", "SHARDFLOW_VERSION"]

SHARDFLOW_VERSION = "0.1.0"  # this package's own version (pyproject.toml)
# the PyTorch API version shardflow implements, shardflow's version as the local label
# (torch_version.py says why)
__version__ = TorchVersion(f"2.13.0+shardflow.{SHARDFLOW_VERSION}")
debug = False
cuda: Optional[str] = None  # noqa: UP045 (torch's annotation)
git_version = "Unknown"
hip: Optional[str] = None  # noqa: UP045
rocm: Optional[str] = None  # noqa: UP045
xpu: Optional[str] = None  # noqa: UP045
