"""``ExponentialFamily``: densities ``p(x; θ) = exp(<t(x), θ> - F(θ) + k(x))``.

A family supplies its natural parameters θ, log normaliser F and mean carrier measure
E[k(x)]; the entropy and the KL divergence between two members of one family then follow
from the Bregman divergence of F, with F's gradient taken by autograd.
"""

from __future__ import annotations

import ember
from ember.distributions.distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (entropy by Bregman divergence).

    >>> from ember.distributions import Normal
    >>> d = Normal(ember.tensor(0.0), ember.tensor(1.0))
    >>> bool((ExponentialFamily.entropy(d) - d.entropy()).abs() < 1e-6)
    True
    """

    @property
    def _natural_params(self):
        """The natural parameters θ, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(θ): the log normaliser as a function of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(x)]: the expected carrier measure."""
        raise NotImplementedError

    def entropy(self):
        """``F(θ) - <θ, ∇F(θ)> - E[k(x)]``, batched over ``batch_shape``."""
        natural = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*natural)
        grads = ember.autograd.grad(log_normalizer.sum(), natural, create_graph=True)
        result = log_normalizer - self._mean_carrier_measure
        for param, grad in zip(natural, grads):
            result = result - (param * grad).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
