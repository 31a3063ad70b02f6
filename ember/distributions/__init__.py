"""``ember.distributions``: torch.distributions' probability distributions, constraints,
transforms and KL divergences, built from ember operators (so samples, log densities and
reparameterized gradients go through ember's RNG and autograd)."""

from __future__ import annotations

from ember.distributions import constraints as constraints
from ember.distributions import transforms as transforms
from ember.distributions.cauchy import Cauchy
from ember.distributions.constraint_registry import biject_to, transform_to
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.exponential import Exponential
from ember.distributions.fishersnedecor import FisherSnedecor
from ember.distributions.generalized_pareto import GeneralizedPareto
from ember.distributions.gumbel import Gumbel
from ember.distributions.half_cauchy import HalfCauchy
from ember.distributions.half_normal import HalfNormal
from ember.distributions.independent import Independent
from ember.distributions.inverse_gamma import InverseGamma
from ember.distributions.laplace import Laplace
from ember.distributions.log_normal import LogNormal
from ember.distributions.logistic_normal import LogisticNormal
from ember.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from ember.distributions.mixture_same_family import MixtureSameFamily
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.normal import Normal
from ember.distributions.pareto import Pareto
from ember.distributions.relaxed_bernoulli import RelaxedBernoulli
from ember.distributions.relaxed_categorical import RelaxedOneHotCategorical
from ember.distributions.studentT import StudentT
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import *  # noqa: F403
from ember.distributions.uniform import Uniform
from ember.distributions.weibull import Weibull
from ember.distributions.wishart import Wishart

from ember.distributions.kl import kl_divergence, register_kl  # isort: skip

__all__ = ["Cauchy", "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor",
           "GeneralizedPareto", "Gumbel", "HalfCauchy", "HalfNormal", "Independent",
           "InverseGamma", "Laplace", "LogNormal",
           "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily",
           "MultivariateNormal", "Normal",
           "Pareto", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "Weibull", "Wishart", "biject_to",
           "constraints", "kl_divergence", "register_kl", "transform_to", "transforms",
           *transforms.__all__]

# discrete families, the gamma family and their KL divergences
from ember.distributions import kl_discrete as _kl_discrete  # noqa: E402, F401  (registers)
from ember.distributions.bernoulli import Bernoulli  # noqa: E402
from ember.distributions.beta import Beta  # noqa: E402
from ember.distributions.binomial import Binomial  # noqa: E402
from ember.distributions.categorical import Categorical  # noqa: E402
from ember.distributions.chi2 import Chi2  # noqa: E402
from ember.distributions.continuous_bernoulli import ContinuousBernoulli  # noqa: E402
from ember.distributions.dirichlet import Dirichlet  # noqa: E402
from ember.distributions.gamma import Gamma  # noqa: E402
from ember.distributions.geometric import Geometric  # noqa: E402
from ember.distributions.kumaraswamy import Kumaraswamy  # noqa: E402
from ember.distributions.lkj_cholesky import LKJCholesky  # noqa: E402
from ember.distributions.multinomial import Multinomial  # noqa: E402
from ember.distributions.negative_binomial import NegativeBinomial  # noqa: E402
from ember.distributions.one_hot_categorical import (  # noqa: E402
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from ember.distributions.poisson import Poisson  # noqa: E402
from ember.distributions.von_mises import VonMises  # noqa: E402

__all__ += ["Bernoulli", "Beta", "Binomial", "Categorical", "Chi2", "ContinuousBernoulli",
            "Dirichlet", "Gamma", "Geometric", "Kumaraswamy", "LKJCholesky", "Multinomial",
            "NegativeBinomial", "OneHotCategorical", "OneHotCategoricalStraightThrough",
            "Poisson", "VonMises"]
