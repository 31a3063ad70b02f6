"""``Kumaraswamy``: a Beta-like density on ``[0, 1]`` with a closed-form CDF, built as a
transformed uniform."""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import AffineTransform, PowerTransform
from ember.distributions.uniform import Uniform
from ember.distributions.utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """E[x^n] = b B(1 + n/a, b)."""
    arg = 1 + n / a
    return b * ember.exp(ember.lgamma(arg) + ember.lgamma(b) - ember.lgamma(arg + b))


class Kumaraswamy(TransformedDistribution):
    """Density ``a b x^(a-1) (1 - x^a)^(b-1)`` with ``a = concentration1``,
    ``b = concentration0``, as ``torch.distributions.Kumaraswamy``: ``x = (1 - u^(1/b))^(1/a)``
    for a uniform ``u``, so samples are reparameterized.

    >>> from ember.distributions import Kumaraswamy
    >>> Kumaraswamy(ember.tensor([1.0]), ember.tensor([1.0])).mean
    tensor([0.5000])
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(ember.full_like(self.concentration0, 0),
                       ember.full_like(self.concentration0, 1), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """``((a - 1) / (a b - 1))^(1/a)`` where ``a, b >= 1``, NaN elsewhere (torch 2.13 gives
        NaN for every ``b > 1``: its log-space formula takes ``log1p(-b)``)."""
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        return ember.where((b < 1) | (a < 1), float("nan"), log_mode).exp()

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _moments(a, b, 2) - _moments(a, b, 1).pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = ember.digamma(b + 1) + euler_constant  # H_b, the b-th harmonic number
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()
