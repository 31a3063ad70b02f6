"""``InverseGamma``: the reciprocal of a Gamma variable."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.gamma import Gamma
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """``1 / X`` with ``X ~ Gamma(concentration, rate)``: density
    ``rate^a / Γ(a) x^(-a-1) exp(-rate / x)``; mean and variance infinite where torch's are
    (concentration <= 1 and <= 2).

    >>> from ember.distributions import InverseGamma
    >>> InverseGamma(ember.tensor(3.0), ember.tensor(1.0)).mean
    tensor(0.5000)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        c = self.concentration
        finite = self.rate / ember.where(c > 1, c - 1, 1.0)
        return ember.where(c > 1, finite, math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        ok = c > 2
        denominator = ember.where(ok, (c - 1).pow(2) * (c - 2), 1.0)
        return ember.where(ok, self.rate.pow(2) / denominator, math.inf)

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + ember.lgamma(c) - (1 + c) * ember.digamma(c)
