"""``Wishart``: the distribution of ``Σ_k x_k x_kᵀ`` for ``df`` normal vectors of covariance
Σ, over positive-definite matrices.

Samples use the Bartlett decomposition: ``L A Aᵀ Lᵀ`` with L the Cholesky factor of Σ and A
lower triangular, ``A_ii = sqrt(Chi2(df - i))`` and standard normals below the diagonal.
"""

from __future__ import annotations

import math
from numbers import Number

import ember
from ember.distributions import constraints
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.multivariate_normal import _precision_to_scale_tril
from ember.distributions.utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma: ``Σ_{i<p} digamma(x - i/2)``."""
    offsets = ember.arange(p, dtype=x.dtype, device=x.device) / 2
    return ember.digamma(x.unsqueeze(-1) - offsets).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution with ``df`` degrees of freedom and scale Σ, given as exactly
    one of ``covariance_matrix``, ``precision_matrix`` (Σ⁻¹) or ``scale_tril`` (chol Σ).

    Shape: the matrices ``(..., p, p)``; ``df`` broadcasts with their batch; ``df > p - 1``.

    >>> from ember.distributions import Wishart
    >>> Wishart(ember.tensor(4.0), covariance_matrix=ember.eye(2)).mean
    tensor([[4., 0.],
            [0., 4.]])
    """

    # the instance's df bound depends on p: __init__ replaces this with greater_than(p - 1)
    arg_constraints = {"covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky,
                       "df": constraints.greater_than(0)}
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, param = next((n, m) for n, m in (("scale_tril", scale_tril),
                                                 ("covariance_matrix", covariance_matrix),
                                                 ("precision_matrix", precision_matrix))
                           if m is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = ember.Size(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = ember.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        setattr(self, name, param.expand(batch_shape + event_shape))
        self.arg_constraints = {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(event_shape[-1] - 1),
        }
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = ember.Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new.arg_constraints = self.arg_constraints
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        eye = ember.eye(self._event_shape[-1], dtype=self.df.dtype, device=self.df.device)
        return ember.cholesky_solve(eye, self._unbroadcasted_scale_tril).expand(
            self._matrix_shape())

    def _df_matrix(self):
        return self.df.view(self._batch_shape + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor <= 0, math.nan, factor)
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_factor(self, sample_shape):
        """A: sqrt(Chi2(df - i)) on the diagonal, standard normals strictly below it."""
        p = self._event_shape[-1]
        shape = ember.Size(sample_shape) + self._batch_shape
        dofs = self.df.unsqueeze(-1) - ember.arange(p, dtype=self.df.dtype,
                                                    device=self.df.device)
        chi2 = 2 * ember._standard_gamma(0.5 * dofs.expand(shape + (p,)))
        tiny = ember.finfo(chi2.dtype).eps
        diagonal = ember.clamp(chi2, min=tiny).sqrt()
        normals = ember.randn(shape + (p, p), dtype=self.df.dtype, device=self.df.device)
        return normals.tril(-1) + ember.diag_embed(diagonal)

    def rsample(self, sample_shape=()):
        chol = self._unbroadcasted_scale_tril @ self._bartlett_factor(sample_shape)
        return chol @ chol.mT

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        precision = ember.cholesky_inverse(self._unbroadcasted_scale_tril)
        trace = (precision * value).sum((-2, -1))  # tr(Σ⁻¹ X) for symmetric Σ⁻¹
        return (-nu * (p * _LOG_2 / 2 + self._half_log_det())
                - ember.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value)[1]
                - trace / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._half_log_det())
                + ember.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x)[1] + _LOG_2 * p) \
            + ember.mvlgamma(y + (p + 1) / 2, p=p)
