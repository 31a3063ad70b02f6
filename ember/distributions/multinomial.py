"""``Multinomial``: counts of ``total_count`` draws over ``K`` categories."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.binomial import Binomial
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Category counts of ``total_count`` (one int for the whole batch) independent draws
    from ``Categorical(probs, logits)``, as ``torch.distributions.Multinomial``; event shape
    ``(K,)``. ``log_prob`` does not need ``total_count`` (any counts are scored).

    >>> from ember.distributions import Multinomial
    >>> d = Multinomial(3, ember.tensor([0.5, 0.5]))
    >>> d.mean, d.log_prob(ember.tensor([3.0, 0.0])).exp()
    (tensor([1.5000, 1.5000]), tensor(0.1250))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = ember.Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(batch_shape + self.event_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        sample_shape = ember.Size(sample_shape)
        draws = self._categorical.sample(ember.Size((self.total_count,)) + sample_shape)
        # (n, *S, *B) -> (*S, *B, n): the draws of one multinomial sample last
        draws = draws.permute(*range(1, draws.dim()), 0)
        counts = ember.zeros(self._extended_shape(sample_shape), dtype=draws.dtype,
                             device=draws.device)
        counts.scatter_add_(-1, draws, ember.ones_like(draws))
        return counts.type_as(self.probs)

    def entropy(self):
        n = ember.tensor(self.total_count)
        term1 = n * self._categorical.entropy() - ember.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = ember.exp(self._binomial.log_prob(support))
        term2 = (binomial_probs * ember.lgamma(support + 1)).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # a category of probability 0 that was never drawn contributes nothing (not 0 * -inf)
        logits = ember.where((value == 0) & (logits == float("-inf")), 0.0, logits)
        log_factorial_n = ember.lgamma(value.sum(-1) + 1)
        log_factorial_xs = ember.lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
