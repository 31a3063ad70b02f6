"""``LKJCholesky``: Cholesky factors of LKJ-distributed correlation matrices, sampled by the
onion method (Lewandowski, Kurowicka and Joe, 2009)."""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.beta import Beta
from ember.distributions.distribution import Distribution
from ember.distributions.utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Lower Cholesky factors ``L`` of ``dim x dim`` correlation matrices ``L L^T`` with
    density proportional to ``det(L L^T)^(concentration - 1)``, as
    ``torch.distributions.LKJCholesky``.

    Sampling (the onion method on Cholesky rows): row ``i`` is ``sqrt(y_i) u_i`` below the
    diagonal, with ``y_i ~ Beta(i/2, concentration + (dim - 1 - i)/2)`` and ``u_i`` uniform on
    the unit sphere of its ``i`` entries; the diagonal completes each row to unit norm.

    >>> from ember.distributions import LKJCholesky
    >>> L = LKJCholesky(3, ember.tensor(2.0)).sample()
    >>> L.shape, bool(((L @ L.T).diagonal() - 1).abs().max() < 1e-5)
    (ember.Size([3, 3]), True)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        # row i draws y_i ~ Beta(i/2, c + (dim - 1 - i)/2); row 0 has no entries to scale
        half_i = ember.arange(dim, dtype=c.dtype, device=c.device) * 0.5  # (dim,)
        conc1 = ember.where(half_i == 0, 0.5, half_i)
        conc0 = c.unsqueeze(-1) + (dim - 1) * 0.5 - half_i  # (*B, dim)
        self._beta = Beta(conc1, conc0)
        super().__init__(c.size(), ember.Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)  # (*S, *B, dim, 1)
            shape = self._extended_shape(sample_shape)  # (*S, *B, dim, dim)
            z = ember.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = z.norm(dim=-1, keepdim=True)
            # row 0 has no entries below the diagonal (0 / 0): it stays 0
            sphere = ember.where(norm > 0, z / ember.where(norm > 0, norm, 1.0), 0.0)
            w = y.sqrt() * sphere
            tiny = ember.finfo(w.dtype).tiny
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + ember.diag_embed(diagonal)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # density of L: prod_i L_ii^(2(c - 1) + dim - i) for rows i = 2..dim (1-based): the
        # LKJ density det^(c-1) times the Jacobian of L -> L L^T
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        row = ember.arange(2, self.dim + 1, dtype=self.concentration.dtype,
                           device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - row
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_normalizer = (0.5 * dm1 * math.log(math.pi) + ember.mvlgamma(alpha - 0.5, dm1)
                          - dm1 * ember.lgamma(alpha))
        return unnormalized - log_normalizer
