"""``OneHotCategorical`` (a ``Categorical`` whose samples are one-hot vectors) and
``OneHotCategoricalStraightThrough`` (its samples carry the straight-through gradient)."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution
from ember.nn.functional import one_hot

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(Distribution):
    """One-hot vectors of ``K`` categories, as ``torch.distributions.OneHotCategorical``: the
    event shape is ``(K,)``; the moments are those of the indicator vector.

    >>> from ember.distributions import OneHotCategorical
    >>> OneHotCategorical(probs=ember.tensor([0.0, 1.0])).sample()
    tensor([0., 1.])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = ember.Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return one_hot(indices, probs.shape[-1]).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + self.batch_shape + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` passes gradients to ``probs`` by the
    straight-through estimator (``sample + probs - probs.detach()``), as torch's.

    >>> from ember.distributions import OneHotCategoricalStraightThrough
    >>> p = ember.tensor([0.0, 1.0], requires_grad=True)
    >>> OneHotCategoricalStraightThrough(probs=p).rsample().requires_grad
    True
    """

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached, so the gradient reaches the parameters
        return samples + (probs - probs.detach())
