"""``ExponentialFamily``: the base class PyTorch gives Normal, Bernoulli, Gamma, Beta,
Dirichlet and Exponential (``isinstance`` checks in user code see the same hierarchy).

Every subclass here computes its entropy and its same-family KL in closed form, so the
Bregman-divergence fallback PyTorch derives from ``_log_normalizer`` through double
backward (``create_graph=True``, which shardflow does not have) is not used.
"""

from __future__ import annotations

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """``p(x) = h(x) exp(<t(x), theta> - F(theta))``; subclasses give closed forms."""
