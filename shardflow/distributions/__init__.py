"""``shardflow.distributions`` (``torch.distributions`` under ``import shardflow as torch``):
probability distributions with PyTorch's API, built on shardflow's differentiable ops
(layer L5: it imports ``ops``, ``autograd`` and ``backend`` only).

Distributions: every one in torch 2.13's ``torch.distributions.__all__`` (one file each, with
torch's module name); ``kl_divergence``/``register_kl`` (``kl.py``, ``kl_more.py``);
``constraints``; ``transforms``; ``biject_to``/``transform_to``. Each file states its
formulas (PyTorch's). ``rsample`` is reparameterised where PyTorch's is: location-scale families by ``loc + eps * scale``, Gamma/Beta/Dirichlet
through implicit gradients (``shardflow/ops/gamma_sampling.py``); discrete ones raise
``NotImplementedError`` as PyTorch does. See docs/COMPAT.md, "torch.distributions".
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    IndependentTransform,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
    Transform,
)
from .uniform import Uniform

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Categorical", "ComposeTransform",
    "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily", "Gamma",
    "Independent", "IndependentTransform", "Laplace", "LogNormal", "MultivariateNormal",
    "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "PowerTransform",
    "SigmoidTransform", "SoftplusTransform", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl",
    "transforms",
]

# the distributions of the compat pass (docs/COMPAT.md, "torch.distributions")
from .binomial import Binomial  # noqa: E402,I001
from .cauchy import Cauchy  # noqa: E402
from .chi2 import Chi2  # noqa: E402
from .continuous_bernoulli import ContinuousBernoulli  # noqa: E402
from .fishersnedecor import FisherSnedecor  # noqa: E402
from .generalized_pareto import GeneralizedPareto  # noqa: E402
from .geometric import Geometric  # noqa: E402
from .gumbel import Gumbel  # noqa: E402
from .half_cauchy import HalfCauchy  # noqa: E402
from .half_normal import HalfNormal  # noqa: E402
from .inverse_gamma import InverseGamma  # noqa: E402
from .kumaraswamy import Kumaraswamy  # noqa: E402
from .lkj_cholesky import LKJCholesky  # noqa: E402
from .logistic_normal import LogisticNormal  # noqa: E402
from .lowrank_multivariate_normal import LowRankMultivariateNormal  # noqa: E402
from .mixture_same_family import MixtureSameFamily  # noqa: E402
from .multinomial import Multinomial  # noqa: E402
from .negative_binomial import NegativeBinomial  # noqa: E402
from .pareto import Pareto  # noqa: E402
from .poisson import Poisson  # noqa: E402
from .relaxed_bernoulli import RelaxedBernoulli  # noqa: E402
from .relaxed_categorical import RelaxedOneHotCategorical  # noqa: E402
from .studentT import StudentT  # noqa: E402
from .von_mises import VonMises  # noqa: E402
from .weibull import Weibull  # noqa: E402
from .wishart import Wishart  # noqa: E402
from . import constraint_registry  # noqa: E402
from .constraint_registry import biject_to, transform_to  # noqa: E402
from . import kl_more  # noqa: E402,F401  (registers the KL pairs of the distributions above)
from .transforms import (  # noqa: E402
    CatTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    ReshapeTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
    identity_transform,
)

__all__ += [
    "Binomial", "Cauchy", "Chi2", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
    "MixtureSameFamily", "Multinomial", "NegativeBinomial", "Poisson", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "StudentT", "FisherSnedecor", "GeneralizedPareto",
    "InverseGamma", "Kumaraswamy", "LogisticNormal", "Pareto", "Weibull", "ContinuousBernoulli",
    "LowRankMultivariateNormal", "VonMises", "LKJCholesky", "Wishart", "CatTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "ReshapeTransform", "SoftmaxTransform", "StackTransform",
    "StickBreakingTransform", "identity_transform", "biject_to", "transform_to", "constraint_registry",
]
