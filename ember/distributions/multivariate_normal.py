"""``MultivariateNormal``: the Gaussian over vectors, parameterised by a covariance, a
precision or a lower Cholesky factor of the covariance (``scale_tril``).

All three are held as the unbroadcasted Cholesky factor L (``Σ = L Lᵀ``); log densities use
triangular solves against L, never an explicit inverse.
"""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Batched matrix-vector product with broadcasting: ``(..., n, m) @ (..., m)``."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """``xᵀ (L Lᵀ)⁻¹ x`` over broadcast batches of L ``(..., n, n)`` and x ``(..., n)``."""
    shape = ember.broadcast_shapes(bL.shape[:-2], bx.shape[:-1])
    bL = bL.expand(shape + bL.shape[-2:])
    bx = bx.expand(shape + bx.shape[-1:])
    solution = ember.linalg.solve_triangular(bL, bx.unsqueeze(-1), upper=False)
    return solution.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(precision):
    """The lower Cholesky factor of ``precision⁻¹`` without forming the inverse (Cholesky of
    the flipped precision, then one triangular solve)."""
    lf = ember.linalg.cholesky(ember.flip(precision, (-2, -1)))
    l_inv = ember.transpose(ember.flip(lf, (-2, -1)), -2, -1)
    eye = ember.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return ember.linalg.solve_triangular(l_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """The multivariate normal ``N(loc, Σ)``; give exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``.

    Shape: ``loc`` ``(..., n)``; matrices ``(..., n, n)``; batch shapes broadcast.

    >>> from ember.distributions import MultivariateNormal
    >>> d = MultivariateNormal(ember.zeros(2), covariance_matrix=ember.eye(2))
    >>> d.log_prob(ember.zeros(2))
    tensor(-1.8379)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, matrix = next((n, m) for n, m in (("scale_tril", scale_tril),
                                                  ("covariance_matrix", covariance_matrix),
                                                  ("precision_matrix", precision_matrix))
                            if m is not None)
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             "leading batch dimensions" if name == "scale_tril" else
                             f"{name} must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = ember.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        lower = self._unbroadcasted_scale_tril
        return ember.matmul(lower, lower.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        mahalanobis = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return (-0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis)
                - self._half_log_det())

    def entropy(self):
        entropy = (0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi))
                   + self._half_log_det())
        if len(self._batch_shape) == 0:
            return entropy
        return entropy.expand(self._batch_shape)
