"""``StudentT``: Student's t with ``df`` degrees of freedom, shifted and scaled."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


def _chi2_rsample(df, shape):
    """Reparameterized Chi2(df) draws: ``2 * Gamma(df / 2, 1)``, differentiable in df through
    the standard gamma's implicit gradient; clamped away from 0 as torch's Gamma does."""
    value = 2 * ember._standard_gamma(0.5 * df.expand(shape))
    tiny = ember.finfo(value.dtype).tiny
    return ember.clamp(value, min=tiny)


class StudentT(Distribution):
    """Student's t: ``loc + scale * X / sqrt(Z / df)``, X standard normal, Z ~ Chi2(df).

    >>> from ember.distributions import StudentT
    >>> StudentT(ember.tensor(3.0)).variance
    tensor(3.)
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        m = self.loc.clone()
        return ember.where(self.df <= 1, math.nan, m)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / ember.where(df > 2, df - 2, 1.0)
        m = ember.where(df > 2, finite, math.inf)
        return ember.where(df <= 1, math.nan, m)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = ember.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = _chi2_rsample(self.df, shape)
        y = x * ember.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + ember.lgamma(0.5 * self.df) - ember.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * ember.log1p(y**2.0 / self.df) - z

    def entropy(self):
        lbeta = (ember.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - ember.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log()
                + 0.5 * (self.df + 1)
                * (ember.digamma(0.5 * (self.df + 1)) - ember.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
