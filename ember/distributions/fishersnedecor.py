"""``FisherSnedecor``: the F distribution, a ratio of scaled chi-squared variables."""

from __future__ import annotations

import math
from numbers import Number

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom:
    ``(X1 / df1) / (X2 / df2)``, ``Xi ~ Chi2(dfi)``.

    >>> from ember.distributions import FisherSnedecor
    >>> FisherSnedecor(ember.tensor(4.0), ember.tensor(6.0)).mean
    tensor(1.5000)
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        if isinstance(df1, Number) and isinstance(df2, Number):
            batch_shape = ember.Size()
        else:
            batch_shape = self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = ember.Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        super(FisherSnedecor, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        df2 = self.df2
        return ember.where(df2 > 2, df2 / ember.where(df2 > 2, df2 - 2, 1.0), math.nan)

    @property
    def mode(self):
        df1 = self.df1
        mode = (df1 - 2) / df1 * self.df2 / (self.df2 + 2)
        return ember.where(df1 > 2, mode, math.nan)

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        safe = ember.where(df2 > 4, df2, 5.0)
        var = (2 * safe.pow(2) * (df1 + safe - 2)
               / (df1 * (safe - 2).pow(2) * (safe - 4)))
        return ember.where(df2 > 4, var, math.nan)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.df1.dtype).tiny
        # Gamma(df / 2, rate=df) draws, clamped away from 0 as torch's Gamma does
        x1 = ember.clamp(ember._standard_gamma(0.5 * self.df1.expand(shape)) / self.df1,
                         min=tiny)
        x2 = ember.clamp(ember._standard_gamma(0.5 * self.df2.expand(shape)) / self.df2,
                         min=tiny)
        return ember.clamp(x1 / x2, min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * ember.log(value)
        t3 = (ct1 + ct2) * ember.log1p(ct3 * value)
        return t1 + t2 - t3
