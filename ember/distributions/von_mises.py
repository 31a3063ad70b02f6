"""``VonMises``: the circular normal distribution, sampled by Best and Fisher's rejection
method."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    """log I0(x), exact to rounding for any x >= 0 (``i0e(x) = exp(-x) I0(x)``)."""
    return ember.special.i0e(x).log() + x


def _best_fisher(loc, concentration, proposal_r, shape):
    """Angles in ``[-pi, pi)`` by Best and Fisher's rejection sampler (float64 throughout):
    a wrapped-Cauchy envelope with parameter ``proposal_r``, one round of three uniforms per
    pending element until every element is accepted."""
    x = ember.zeros(shape, dtype=ember.float64, device=loc.device)
    done = ember.zeros(shape, dtype=ember.bool, device=loc.device)
    while not bool(done.all()):
        u1, u2, u3 = ember.rand((3, *shape), dtype=ember.float64, device=loc.device).unbind()
        z = ember.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        accept = accept & ~done
        x = ember.where(accept, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Density ``exp(k cos(x - loc)) / (2 pi I0(k))`` on the circle, ``k = concentration``, as
    ``torch.distributions.VonMises`` (support: the real line, samples in ``[-pi, pi)``; no
    ``rsample``). ``variance`` is the circular variance ``1 - I1(k) / I0(k)``.

    >>> from ember.distributions import VonMises
    >>> round(VonMises(ember.tensor(0.0), ember.tensor(1.0)).variance.item(), 4)
    0.5536
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * ember.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(k)

    @lazy_property
    def _proposal_r(self):
        # the envelope's parameter; for tiny k its series 1/k + k avoids cancellation
        k = self.concentration.double()
        tau = 1 + (1 + 4 * k * k).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        return ember.where(k < 1e-5, 1 / k + k, (1 + rho * rho) / (2 * rho))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            x = _best_fisher(self.loc.double(), self.concentration.double(), self._proposal_r,
                             shape)
        return x.to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        return type(self)(self.loc.expand(batch_shape), self.concentration.expand(batch_shape),
                          validate_args=self.__dict__.get("_validate_args"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        k = self.concentration
        return 1 - ember.special.i1e(k) / ember.special.i0e(k)
