"""``ember.distributions``: torch.distributions' probability distributions, constraints,
transforms and KL divergences, built from ember operators (so samples, log densities and
reparameterized gradients go through ember's RNG and autograd)."""

from __future__ import annotations

from ember.distributions import constraints as constraints
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.normal import Normal

from ember.distributions.kl import kl_divergence, register_kl  # isort: skip

__all__ = ["Distribution", "ExponentialFamily", "Normal", "constraints", "kl_divergence",
           "register_kl"]
