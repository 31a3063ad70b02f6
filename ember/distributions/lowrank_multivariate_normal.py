"""``LowRankMultivariateNormal``: a Gaussian with covariance ``W Wᵀ + diag(D)``.

Log densities use the Woodbury identity and the matrix determinant lemma through the
Cholesky factor of the m x m capacitance matrix ``I + Wᵀ D⁻¹ W``, so the cost is linear in
the event size n for a rank m much smaller than n.
"""

from __future__ import annotations

import math

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.multivariate_normal import _batch_mahalanobis, _batch_mv
from ember.distributions.utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_capacitance_tril(cov_factor, cov_diag):
    """Cholesky of ``I + Wᵀ D⁻¹ W``."""
    m = cov_factor.size(-1)
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    capacitance = ember.matmul(wt_dinv, cov_factor)
    capacitance = capacitance + ember.eye(m, dtype=capacitance.dtype, device=capacitance.device)
    return ember.linalg.cholesky(capacitance)


def _batch_lowrank_logdet(cov_diag, capacitance_tril):
    """``log det(W Wᵀ + D) = log det(C) + log det(D)`` (the matrix determinant lemma)."""
    return (2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            + cov_diag.log().sum(-1))


def _batch_lowrank_mahalanobis(cov_factor, cov_diag, x, capacitance_tril):
    """``xᵀ (W Wᵀ + D)⁻¹ x`` by the Woodbury identity."""
    wt_dinv = cov_factor.mT / cov_diag.unsqueeze(-2)
    wt_dinv_x = _batch_mv(wt_dinv, x)
    term1 = (x.pow(2) / cov_diag).sum(-1)
    term2 = _batch_mahalanobis(capacitance_tril, wt_dinv_x)
    return term1 - term2


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal with covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)``.

    Shape: ``loc`` ``(..., n)``, ``cov_factor`` ``(..., n, m)``, ``cov_diag`` ``(..., n)``.

    >>> from ember.distributions import LowRankMultivariateNormal
    >>> d = LowRankMultivariateNormal(ember.zeros(2), ember.zeros(2, 1), ember.ones(2))
    >>> d.log_prob(ember.zeros(2))
    tensor(-1.8379)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        super(LowRankMultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                       validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(self._batch_shape + self._event_shape)

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    def _eye(self, n):
        return ember.eye(n, dtype=self.loc.dtype, device=self.loc.device)

    @lazy_property
    def scale_tril(self):
        # L = D^1/2 chol(I + D^-1/2 W Wᵀ D^-1/2): Cholesky of a well-conditioned matrix
        n = self._event_shape[0]
        sqrt_diag = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / sqrt_diag
        k = ember.matmul(dinvsqrt_w, dinvsqrt_w.mT) + self._eye(n)
        return (sqrt_diag * ember.linalg.cholesky(k)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        covariance = ember.matmul(w, w.mT) + ember.diag_embed(self._unbroadcasted_cov_diag)
        return covariance.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        # Woodbury: (W Wᵀ + D)⁻¹ = D⁻¹ - D⁻¹ W C⁻¹ Wᵀ D⁻¹
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = ember.linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        precision = (ember.diag_embed(self._unbroadcasted_cov_diag.reciprocal())
                     - ember.matmul(a.mT, a))
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_w = _standard_normal(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        mahalanobis = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                                 self._unbroadcasted_cov_diag, diff,
                                                 self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + mahalanobis)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        entropy = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        if len(self._batch_shape) == 0:
            return entropy
        return entropy.expand(self._batch_shape)
