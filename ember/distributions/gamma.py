"""``Gamma``: shape ``concentration``, inverse scale ``rate``; reparameterized samples with
implicit gradients (``ember._standard_gamma``)."""

from __future__ import annotations

from numbers import Number

import ember
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Density ``rate^c x^(c-1) e^(-rate x) / Gamma(c)`` on ``x >= 0``, as
    ``torch.distributions.Gamma``; ``rsample`` differentiates through the sample by implicit
    reparameterization.

    >>> from ember.distributions import Gamma
    >>> d = Gamma(ember.tensor([2.0]), ember.tensor([4.0]))
    >>> d.mean, d.variance
    (tensor([0.5000]), tensor([0.1250]))
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = ember.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = ember.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        value = ember._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # a sample that rounds to 0 would give log_prob -inf: keep it at the smallest normal
        value.detach().clamp_(min=ember.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value):
        value = ember.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        c, rate = self.concentration, self.rate
        return ember.xlogy(c, rate) + ember.xlogy(c - 1, value) - rate * value - ember.lgamma(c)

    def entropy(self):
        c = self.concentration
        return c - ember.log(self.rate) + ember.lgamma(c) + (1.0 - c) * ember.digamma(c)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return ember.lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.special.gammainc(self.concentration, self.rate * value)
