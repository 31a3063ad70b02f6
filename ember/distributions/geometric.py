"""``Geometric``: failures before the first success of independent trials."""

from __future__ import annotations

from numbers import Number

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
from ember.nn.functional import binary_cross_entropy_with_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Failures ``k >= 0`` before the first success, probability ``(1-p)^k p``, as
    ``torch.distributions.Geometric`` (``probs`` must be positive when validated).

    >>> from ember.distributions import Geometric
    >>> Geometric(ember.tensor([0.25])).mean
    tensor([3.])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        param = probs if probs is not None else logits
        batch_shape = ember.Size() if isinstance(param, Number) else (
            self.probs if probs is not None else self.logits).size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            self._check_positive()

    def _check_positive(self) -> None:
        valid = self.probs > 0
        if not bool(valid.all()):
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be "
                             f"positive but found invalid values:\n{self.probs[~valid]}")

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = ember.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        tiny = ember.finfo(self.probs.dtype).tiny
        with ember.no_grad():
            u = ember.empty(shape, dtype=self.probs.dtype, device=self.probs.device)
            u.uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 and k = 0: probability 1 (0 * log 0 counts as 0)
        probs = ember.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        bce = binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs
