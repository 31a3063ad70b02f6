"""``GeneralizedPareto``: the peaks-over-threshold distribution of extreme value theory."""

from __future__ import annotations

import math
from numbers import Number

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution with location ``loc``, ``scale`` σ and shape
    ``concentration`` ξ: ``P(X > x) = (1 + ξ z)^(-1/ξ)``, ``z = (x - loc) / σ`` (``exp(-z)``
    at ξ = 0). Its support is ``[loc, inf)`` for ξ >= 0 and ``[loc, loc - σ/ξ]`` for ξ < 0;
    the mean is nan for ξ >= 1 and the variance nan for ξ >= 1/2, as torch's.

    >>> from ember.distributions import GeneralizedPareto
    >>> GeneralizedPareto(0.0, 1.0, 0.0).cdf(ember.tensor(1.0))
    tensor(0.6321)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(p, Number) for p in (loc, scale, concentration)):
            batch_shape = ember.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = ember.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = ember.where(self.concentration < 0,
                            self.loc - self.scale / self._safe_concentration(), math.inf)
        return constraints.interval(self.loc, upper)

    def _safe_concentration(self):
        # ξ with its zeros replaced, so that the ξ ≠ 0 branch of a `where` stays finite
        return ember.where(self.concentration == 0, 1.0, self.concentration)

    def _tail_exponent(self, value):
        """``log1p(ξ z) / ξ``, and ``z`` at ξ = 0: minus the log survival function."""
        z = (value - self.loc) / self.scale
        xi = self._safe_concentration()
        return ember.where(self.concentration == 0, z, ember.log1p(xi * z) / xi)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        xi = self._safe_concentration()
        body = ember.where(self.concentration == 0, z, (1 / xi + 1) * ember.log1p(xi * z))
        return -self.scale.log() - body

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.expm1(-self._tail_exponent(value))

    def icdf(self, value):
        log_survival = ember.log1p(-value)
        xi = self._safe_concentration()
        z = ember.where(self.concentration == 0, -log_survival,
                        ember.expm1(-xi * log_survival) / xi)
        return self.loc + self.scale * z

    @property
    def mean(self):
        xi = self.concentration
        finite = self.loc + self.scale / ember.where(xi < 1, 1 - xi, 1.0)
        return ember.where(xi < 1, finite, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        xi = self.concentration
        ok = xi < 0.5
        denominator = ember.where(ok, (1 - xi).pow(2) * (1 - 2 * xi), 1.0)
        return ember.where(ok, self.scale.pow(2) / denominator, math.nan)

    def entropy(self):
        return self.scale.log() + self.concentration + 1
