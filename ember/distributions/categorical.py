"""``Categorical``: one of ``K`` categories, parameterized by ``probs`` or ``logits`` over the
last dimension (normalised on construction)."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.bernoulli import one_of
from ember.distributions.distribution import Distribution
from ember.distributions.utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Category indices ``0 .. K-1`` with probabilities ``probs[..., k]`` (or
    ``softmax(logits)``), as ``torch.distributions.Categorical``: ``probs`` is divided by its
    sum and ``logits`` shifted by their logsumexp; the batch shape is the parameter's shape
    without its last dimension.

    >>> from ember.distributions import Categorical
    >>> d = Categorical(probs=ember.tensor([1.0, 3.0]))
    >>> d.probs, d.log_prob(ember.tensor(1)).exp()
    (tensor([0.2500, 0.7500]), tensor(0.7500))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.ndim > 1 else ember.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = ember.Size(batch_shape)
        param_shape = batch_shape + ember.Size((self._num_events,))
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    def sample(self, sample_shape=()):
        sample_shape = ember.Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)  # (B, K)
        with ember.no_grad():  # an empty sample_shape is refused by multinomial, as torch's
            draws = ember.multinomial(probs_2d, sample_shape.numel(), True).T  # (n, B)
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = ember.clamp(self.logits, min=ember.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = ember.arange(self._num_events, dtype=ember.long, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + self._batch_shape)
        return values
