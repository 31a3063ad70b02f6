"""``NegativeBinomial``: successes before ``total_count`` failures."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.bernoulli import one_of
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Gamma
from ember.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from ember.nn.functional import logsigmoid

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """Successes (each of probability ``probs``) before ``total_count`` failures, as
    ``torch.distributions.NegativeBinomial``; ``total_count`` may be any non-negative real.
    Samples are Poisson draws of a Gamma(``total_count``, ``exp(-logits)``) rate.

    >>> from ember.distributions import NegativeBinomial
    >>> NegativeBinomial(3.0, ember.tensor([0.5])).mean
    tensor([3.])
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = ember.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=ember.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return ember.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -ember.lgamma(n + value) + ember.lgamma(1.0 + value) + ember.lgamma(n)
        # total_count = value = 0 has probability 1
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
