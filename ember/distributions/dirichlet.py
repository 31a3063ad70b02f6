"""``Dirichlet``: distributions over the probability simplex; reparameterized samples with
implicit gradients (``ember._sample_dirichlet`` and ``ember._dirichlet_grad``)."""

from __future__ import annotations

import ember
from ember.autograd import Function, once_differentiable
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily
from ember.nn.functional import one_hot

__all__ = ["Dirichlet"]


class _DirichletSample(Function):
    """A Dirichlet draw whose backward is the implicit reparameterization gradient: each
    coordinate moves along its beta marginal and the others shrink in proportion."""

    @staticmethod
    def forward(ctx, concentration):
        x = ember._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, True).expand_as(concentration)
        grad = ember._dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, True))


class Dirichlet(ExponentialFamily):
    """Points of the simplex with density ``prod x_i^(c_i - 1) / B(c)``, as
    ``torch.distributions.Dirichlet``: the last dimension of ``concentration`` is the event.

    >>> from ember.distributions import Dirichlet
    >>> Dirichlet(ember.tensor([1.0, 3.0])).mean
    tensor([0.2500, 0.7500])
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = ember.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _DirichletSample.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (ember.xlogy(c - 1.0, value).sum(-1) + ember.lgamma(c.sum(-1))
                - ember.lgamma(c).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        shifted = (self.concentration - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, True)
        # every concentration below 1: the density peaks at a vertex
        at_vertex = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = one_hot(mode.argmax(dim=-1), shifted.shape[-1]).to(mode.dtype)
        return ember.where(at_vertex, vertex, mode)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        c0 = c.sum(-1)
        return (ember.lgamma(c).sum(-1) - ember.lgamma(c0) - (k - c0) * ember.digamma(c0)
                - ((c - 1.0) * ember.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))
