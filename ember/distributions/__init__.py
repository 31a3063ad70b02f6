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
from ember.distributions.gumbel import Gumbel
from ember.distributions.half_cauchy import HalfCauchy
from ember.distributions.half_normal import HalfNormal
from ember.distributions.independent import Independent
from ember.distributions.laplace import Laplace
from ember.distributions.log_normal import LogNormal
from ember.distributions.logistic_normal import LogisticNormal
from ember.distributions.normal import Normal
from ember.distributions.pareto import Pareto
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import *  # noqa: F403
from ember.distributions.uniform import Uniform
from ember.distributions.weibull import Weibull

from ember.distributions.kl import kl_divergence, register_kl  # isort: skip

__all__ = ["Cauchy", "Distribution", "Exponential", "ExponentialFamily", "Gumbel",
           "HalfCauchy", "HalfNormal", "Independent", "Laplace", "LogNormal", "LogisticNormal",
           "Normal", "Pareto", "TransformedDistribution", "Uniform", "Weibull", "biject_to",
           "constraints", "kl_divergence", "register_kl", "transform_to", "transforms",
           *transforms.__all__]
