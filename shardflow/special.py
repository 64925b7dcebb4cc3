"""``torch.special``: every function of torch 2.13's module (a re-export module, no logic).

The implementations are ops in ``shardflow/ops/``: the gamma family and ``erfinv`` /
``xlogy`` (``special_functions.py``), ``i0`` / ``i1`` (``bessel.py``), the incomplete gamma
functions (``incomplete_gamma.py``), SciPy-backed one-argument functions
(``special_unary.py``: ``entr``, ``erfcx``, ``i0e``, ``i1e``, ``ndtr``, ``log_ndtr``,
``ndtri``, the Bessel and Airy functions), ``xlog1py`` / ``zeta`` (``special_binary.py``)
and the orthogonal polynomials (``special_polynomials.py``). Names that are ops under another
name (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma`` ...) take ``out=`` here as in
PyTorch (``special_common.with_out``); ``softmax`` / ``log_softmax`` have no ``out=`` in
PyTorch either.
"""

from .ops.bessel import i0 as _i0
from .ops.bessel import special_i1 as _i1
from .ops.elementwise import erf as _erf
from .ops.elementwise import erfc as _erfc
from .ops.elementwise import exp2 as _exp2
from .ops.elementwise import expm1 as _expm1
from .ops.elementwise import log1p as _log1p
from .ops.elementwise import sigmoid as _sigmoid
from .ops.incomplete_gamma import igamma as _igamma
from .ops.incomplete_gamma import igammac as _igammac
from .ops.math_extra import logit as _logit
from .ops.math_extra import sinc as _sinc
from .ops.reduce import logsumexp as _logsumexp
from .ops.rounding import round as _round
from .ops.softmax import log_softmax, softmax
from .ops.special_binary import xlog1py, zeta
from .ops.special_common import with_out as _with_out
from .ops.special_functions import digamma as _digamma
from .ops.special_functions import erfinv as _erfinv
from .ops.special_functions import lgamma as _lgamma
from .ops.special_functions import mvlgamma as _mvlgamma
from .ops.special_functions import polygamma as _polygamma
from .ops.special_functions import xlogy as _xlogy
from .ops.special_polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from .ops.special_unary import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    entr,
    erfcx,
    i0e,
    i1e,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtr,
    ndtri,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)

digamma = _with_out(_digamma, "special_digamma")
psi = _with_out(_digamma, "special_psi")
gammaln = _with_out(_lgamma, "special_gammaln")
polygamma = _with_out(_polygamma, "special_polygamma")
multigammaln = _with_out(_mvlgamma, "special_multigammaln")
erf = _with_out(_erf, "special_erf")
erfc = _with_out(_erfc, "special_erfc")
erfinv = _with_out(_erfinv, "special_erfinv")
expit = _with_out(_sigmoid, "special_expit")
exp2 = _with_out(_exp2, "special_exp2")
expm1 = _with_out(_expm1, "special_expm1")
log1p = _with_out(_log1p, "special_log1p")
logit = _with_out(_logit, "special_logit")
logsumexp = _with_out(_logsumexp, "special_logsumexp")
round = _with_out(_round, "special_round")  # noqa: A001 - torch.special.round
sinc = _with_out(_sinc, "special_sinc")
xlogy = _with_out(_xlogy, "special_xlogy")
gammainc = _with_out(_igamma, "special_gammainc")
gammaincc = _with_out(_igammac, "special_gammaincc")
i0 = _with_out(_i0, "special_i0")
i1 = _with_out(_i1, "special_i1")

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
    "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
    "xlogy", "zeta",
]
