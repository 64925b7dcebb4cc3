"""``torch.nn.parallel.parallel_apply``: the module path of ``parallel_apply`` (``primitives.py``:
the modules run one after the other here, the same results as torch's threads)."""

from .primitives import parallel_apply

__all__ = ["parallel_apply"]
