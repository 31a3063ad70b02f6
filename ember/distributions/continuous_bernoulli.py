"""``ContinuousBernoulli``: the density on ``[0, 1]`` proportional to
``probs^x (1 - probs)^(1 - x)`` (Loaiza-Ganem and Cunningham)."""

from __future__ import annotations

import math
from numbers import Number

import ember
from ember.distributions import constraints
from ember.distributions.bernoulli import one_of
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import (
    binary_logits_log_prob,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["ContinuousBernoulli"]

# NOTE [Near one half]
# With t = 1 - 2p the normalizer is C(p) = 2 artanh(t) / t and the moments have removable
# singularities at p = 1/2. Inside ``lims`` the closed forms are evaluated at a safe point
# (``lims[0]``) and replaced by their Taylor series in d = p - 1/2:
#   log C = log 2 + 4/3 d^2 + 104/45 d^4,  mean = 1/2 + d/3 + 16/45 d^3,
#   variance = 1/12 - d^2/15 + 128/945 d^4.
# The natural parameter eta = logit(p) has log normalizer log(expm1(eta) / eta)
#   = eta/2 + eta^2/24 - eta^4/2880 + ...  near 0.


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution of ``probs`` (or ``logits``), as
    ``torch.distributions.ContinuousBernoulli``: ``probs`` is clamped away from 0 and 1 and
    the closed forms switch to series inside ``lims`` (NOTE [Near one half]); ``rsample``
    inverts the CDF of a uniform draw.

    >>> from ember.distributions import ContinuousBernoulli
    >>> ContinuousBernoulli(ember.tensor([0.5])).mean
    tensor([0.5000])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        one_of(probs, logits)
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            # validated before the clamp below hides out-of-range values
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = ember.Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        batch_shape = ember.Size(batch_shape)
        new._lims = self._lims
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _stable(self):
        """Where the closed forms are used (outside ``lims``)."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return ember.where(self._stable(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        p = self._cut_probs()
        log_odds_gap = ember.log1p(-p) - ember.log(p)  # 2 artanh(1 - 2p)
        closed = ember.log(log_odds_gap.abs()) - ember.log((1 - 2 * p).abs())
        d2 = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2
        return ember.where(self._stable(), closed, taylor)

    @property
    def mean(self):
        p = self._cut_probs()
        closed = p / (2 * p - 1) + 1 / (ember.log1p(-p) - ember.log(p))
        d = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d.pow(2)) * d
        return ember.where(self._stable(), closed, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        p = self._cut_probs()
        closed = (p * (p - 1) / (1 - 2 * p).pow(2)
                  + 1 / (ember.log1p(-p) - ember.log(p)).pow(2))
        d2 = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2
        return ember.where(self._stable(), closed, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return binary_logits_log_prob(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        closed = (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1)
        inside = ember.where(self._stable(), closed, value)
        return ember.where(value <= 0, 0.0, ember.where(value >= 1, 1.0, inside))

    def icdf(self, value):
        p = self._cut_probs()
        closed = ((ember.log1p(-p + value * (2 * p - 1)) - ember.log1p(-p))
                  / (ember.log(p) - ember.log1p(-p)))
        return ember.where(self._stable(), closed, value)

    def entropy(self):
        log_q, log_p = ember.log1p(-self.probs), ember.log(self.probs)
        return self.mean * (log_q - log_p) - self._cont_bern_log_norm() - log_q

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        stable = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = ember.where(stable, x, self._lims[0] - 0.5)
        closed = ember.log(ember.expm1(cut).abs()) - ember.log(cut.abs())
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return ember.where(stable, closed, taylor)
