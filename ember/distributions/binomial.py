"""``Binomial``: successes in ``total_count`` independent trials."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.bernoulli import one_of
from ember.distributions.distribution import Distribution
from ember.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # max(x, 0) whose gradient at 0 is 1/2, as torch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def homogeneous_count(total_count, what: str) -> int:
    """The one total count of every batch element; NotImplementedError when they differ."""
    count = int(total_count.max())
    if not total_count.min() == count:
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return count


class Binomial(Distribution):
    """Successes in ``total_count`` trials of probability ``probs`` (or
    ``sigmoid(logits)``), as ``torch.distributions.Binomial``; ``total_count`` broadcasts
    with the parameter and takes its dtype.

    >>> from ember.distributions import Binomial
    >>> d = Binomial(4, ember.tensor([0.5]))
    >>> d.mean, d.log_prob(ember.tensor([2.0])).exp()
    (tensor([2.]), tensor([0.3750]))
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
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
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = ember.Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(Binomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_choose = (ember.lgamma(n + 1) - ember.lgamma(value + 1)
                      - ember.lgamma(n - value + 1))
        # n log(1 + e^logits), stable for logits of either sign
        log_normalizer = n * _clamp_by_zero(logits) + n * ember.log1p(ember.exp(-logits.abs()))
        return log_choose + value * logits - log_normalizer

    def entropy(self):
        homogeneous_count(self.total_count, "entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        count = homogeneous_count(self.total_count, "enumerate_support")
        values = ember.arange(1 + count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
