"""``MixtureSameFamily``: a mixture whose components are the batch of one distribution."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture of the ``k`` components that ``component_distribution`` batches along its
    rightmost batch dim, weighted by the Categorical ``mixture_distribution``.

    Shape: ``component_distribution.batch_shape == batch_shape + (k,)``; the mixture's
    batch shape broadcasts against ``batch_shape``.

    >>> from ember.distributions import Categorical, MixtureSameFamily, Normal
    >>> mix = MixtureSameFamily(Categorical(probs=ember.ones(2)),
    ...                         Normal(ember.tensor([-1.0, 1.0]), ember.ones(2)))
    >>> mix.mean
    tensor(0.)
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        from ember.distributions.categorical import Categorical

        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(self._mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "ember.distributions.Categorical")
        if not isinstance(self._component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "ember.distributions.Distribution")
        mdbs = self._mixture_distribution.batch_shape
        cdbs = self._component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 "compatible with `component_distribution.batch_shape`"
                                 f"({cdbs})")
        km = self._mixture_distribution.logits.shape[-1]
        kc = self._component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = self._component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        batch_shape_comp = batch_shape + (self._num_component,)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(batch_shape_comp)
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        super(MixtureSameFamily, new).__init__(batch_shape=batch_shape,
                                               event_shape=new._component_distribution.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return ember.sum(probs * self.component_distribution.mean, dim=-1 - self._event_ndims)

    @property
    def variance(self):
        # law of total variance: Var(Y) = E[Var(Y|X)] + Var(E[Y|X])
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = ember.sum(probs * self.component_distribution.variance, dim=dim)
        deviation = self.component_distribution.mean - self._pad(self.mean)
        var_cond_mean = ember.sum(probs * deviation.pow(2.0), dim=dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        x = self._pad(x)
        cdf_x = self.component_distribution.cdf(x)
        mix_prob = self.mixture_distribution.probs
        return ember.sum(cdf_x * mix_prob, dim=-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        x = self._pad(x)
        log_prob_x = self.component_distribution.log_prob(x)  # (S, B, k)
        log_mix_prob = ember.log_softmax(self.mixture_distribution.logits, dim=-1)  # (B, k)
        return ember.logsumexp(log_prob_x + log_mix_prob, dim=-1)  # (S, B)

    def sample(self, sample_shape=()):
        with ember.no_grad():
            sample_shape = ember.Size(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = self.event_shape
            mix_sample = self.mixture_distribution.sample(sample_shape)  # (n, B)
            mix_shape = mix_sample.shape
            comp_samples = self.component_distribution.sample(sample_shape)  # (n, B, k, E)
            # (n, B) -> (n, B, 1, 1...) -> (n, B, 1, E): which component, per event entry
            index = mix_sample.reshape(mix_shape + ember.Size([1] * (len(es) + 1)))
            index = index.repeat(ember.Size([1] * len(mix_shape)) + ember.Size([1]) + es)
            samples = ember.gather(comp_samples, gather_dim, index)
            return samples.squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = x.shape
        return x.reshape(xs[:-1] + ember.Size(pad_ndims * [1]) + xs[-1:]
                         + ember.Size(self._event_ndims * [1]))

    def __repr__(self) -> str:
        args_string = f"\n  {self.mixture_distribution},\n  {self.component_distribution}"
        return "MixtureSameFamily(" + args_string + ")"
