"""``torch.special``'s names that shardflow has (a re-export module, no logic): the
implementations are ops in ``shardflow/ops/``."""

from .ops.elementwise import erf, erfc, expm1, log1p
from .ops.elementwise import sigmoid as expit
from .ops.reduce import logsumexp
from .ops.special_functions import digamma, erfinv, polygamma, xlogy
from .ops.special_functions import digamma as psi
from .ops.special_functions import lgamma as gammaln
from .ops.special_functions import mvlgamma as multigammaln

__all__ = ["digamma", "psi", "gammaln", "polygamma", "multigammaln", "erf", "erfc", "erfinv",
           "expit", "expm1", "log1p", "logsumexp", "xlogy"]
