"""``kl_divergence`` and its registry of closed forms (torch's ``register_kl`` dispatch).

# NOTE [KL dispatch]
A pair of types (P, Q) is looked up by the most specific registered pair (P', Q') with
P <: P' and Q <: Q': pairs are ordered lexicographically by subclassing, once with P first
and once with Q first; if the two orders pick different functions the call is ambiguous and
warns (register the exact pair to silence it). Lookups are memoized per type pair; a new
registration clears the memo.
"""

from __future__ import annotations

import math
import warnings
from functools import total_ordering

import ember
from ember.distributions.cauchy import Cauchy
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.exponential import Exponential
from ember.distributions.gumbel import Gumbel
from ember.distributions.half_normal import HalfNormal
from ember.distributions.independent import Independent
from ember.distributions.laplace import Laplace
from ember.distributions.lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
)
from ember.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from ember.distributions.normal import Normal
from ember.distributions.pareto import Pareto
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.uniform import Uniform
from ember.distributions.utils import _sum_rightmost, euler_constant

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p, type_q):
    """A decorator registering ``fn(p, q)`` as ``KL(p || q)`` for the pair of types.

    >>> from ember.distributions import Normal, register_kl
    >>> class MyNormal(Normal):
    ...     pass
    >>> @register_kl(MyNormal, MyNormal)
    ... def _kl_mine(p, q):
    ...     return ember.zeros(p.batch_shape)
    """
    for name, cls in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(cls, type) and issubclass(cls, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {cls}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The registered function for the most specific match (NOTE [KL dispatch])."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning, stacklevel=3)
    return left_fun


def _infinite_like(tensor):
    return ember.full_like(tensor, math.inf)


def _x_log_x(tensor):
    return tensor * tensor.log()


def kl_divergence(p: Distribution, q: Distribution):
    """``KL(p || q)``, batched over the distributions' batch shape.

    Raises:
        NotImplementedError: no closed form is registered for the pair of types.

    >>> from ember.distributions import Normal, kl_divergence
    >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
    tensor(0.5000)
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fun(p, q)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams = [np.detach().requires_grad_() for np in p._natural_params]
    q_nparams = q._natural_params
    lg_normal = p._log_normalizer(*p_nparams)
    gradients = ember.autograd.grad(lg_normal.sum(), p_nparams, create_graph=True)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        term = (qnp - pnp) * g
        result = result - _sum_rightmost(term, len(q.event_shape))
    return result


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


# NOTE [Cross-family KL]
# For p and q of different families, KL(p || q) = -H(p) - E_p[log q]; each pair below writes
# E_p[log q] in closed form from p's moments (E[x], E[x²], E[exp(-x / β)], E|x - m|), and is
# infinite where p's support leaves q's.

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _where_inf(condition, value):
    return ember.where(condition, math.inf, value)


def _infinity(p, q):
    return _infinite_like(p.mode)


def _normal_cross_entropy(q, mean, second_moment):
    """-E_p[log N(x; q.loc, q.scale)] from p's E[x] and E[x²]."""
    expected_square = second_moment - 2 * q.loc * mean + q.loc.pow(2)
    return q.scale.log() + _LOG_SQRT_2PI + expected_square / (2 * q.scale.pow(2))


def _gumbel_cross_entropy(q, mean, exp_moment):
    """-E_p[log Gumbel(x; q.loc, q.scale)] from p's E[x] and E[exp(-(x - loc) / scale)]."""
    return q.scale.log() + (mean - q.loc) / q.scale + exp_moment


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _where_inf((q.low > p.low) | (q.high < p.high), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return (-scale_ratio.log() + loc_abs_diff / q.scale
            + scale_ratio * ember.exp(-loc_abs_diff / p.scale) - 1)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = ember.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _where_inf(p.scale < q.scale, result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra_event_dim = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra_event_dim)


def _batch_trace_xxt(bmat):
    """trace(X Xᵀ): the sum of squares of each matrix of the batch."""
    return bmat.pow(2).sum((-2, -1))


def _log_diag_sum(tril):
    return tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = _log_diag_sum(q_tril) - _log_diag_sum(p_tril)
    n = p.event_shape[0]
    shape = ember.broadcast_shapes(q_tril.shape[:-2], p_tril.shape[:-2]) + (n, n)
    solved = ember.linalg.solve_triangular(q_tril.expand(shape), p_tril.expand(shape),
                                           upper=False)
    term2 = _batch_trace_xxt(solved)
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


def _lowrank_parts(q):
    return q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril


def _capacitance_solve(q):
    """C⁻¹ᐟ² Wᵀ D⁻¹ of a low-rank q (the Woodbury correction's factor)."""
    w, d, cap = _lowrank_parts(q)
    return ember.linalg.solve_triangular(cap, w.mT / d.unsqueeze(-2), upper=False)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Low Rank Multivariate Normals with "
                         "different event shapes cannot be computed")
    pw, pd, pcap = _lowrank_parts(p)
    qw, qd, qcap = _lowrank_parts(q)
    term1 = _batch_lowrank_logdet(qd, qcap) - _batch_lowrank_logdet(pd, pcap)
    term3 = _batch_lowrank_mahalanobis(qw, qd, q.loc - p.loc, qcap)
    a = _capacitance_solve(q)
    term2 = ((pd / qd).sum(-1) + _batch_trace_xxt(pw * qd.rsqrt().unsqueeze(-1))
             - _batch_trace_xxt(a * pd.sqrt().unsqueeze(-2))
             - _batch_trace_xxt(ember.matmul(a, pw)))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    p_tril = p._unbroadcasted_scale_tril
    qw, qd, qcap = _lowrank_parts(q)
    term1 = _batch_lowrank_logdet(qd, qcap) - 2 * _log_diag_sum(p_tril)
    term3 = _batch_lowrank_mahalanobis(qw, qd, q.loc - p.loc, qcap)
    a = _capacitance_solve(q)
    term2 = (_batch_trace_xxt(p_tril * qd.rsqrt().unsqueeze(-1))
             - _batch_trace_xxt(ember.matmul(a, p_tril)))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    pw, pd, pcap = _lowrank_parts(p)
    q_tril = q._unbroadcasted_scale_tril
    term1 = 2 * _log_diag_sum(q_tril) - _batch_lowrank_logdet(pd, pcap)
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    n, m = p.event_shape[0], pw.size(-1)
    batch = ember.broadcast_shapes(q_tril.shape[:-2], pw.shape[:-2])
    q_tril = q_tril.expand(batch + (n, n))
    solved_w = ember.linalg.solve_triangular(q_tril, pw.expand(batch + (n, m)), upper=False)
    solved_d = ember.linalg.solve_triangular(q_tril, ember.diag_embed(pd.sqrt()).expand(
        batch + (n, n)), upper=False)
    term2 = _batch_trace_xxt(solved_w) + _batch_trace_xxt(solved_d)
    return 0.5 * (term1 + term2 + term3 - n)


for _p, _q in [(Normal, Uniform), (Normal, Pareto), (Normal, Exponential),
               (Laplace, Uniform), (Laplace, Pareto), (Laplace, Exponential),
               (Gumbel, Uniform), (Gumbel, Pareto), (Gumbel, Exponential),
               (Exponential, Uniform), (Exponential, Pareto), (Pareto, Uniform)]:
    register_kl(_p, _q)(_infinity)


@register_kl(Uniform, Normal)
@register_kl(Exponential, Normal)
@register_kl(Gumbel, Normal)
@register_kl(Laplace, Normal)
def _kl_finite_variance_normal(p, q):
    mean = p.mean
    return -p.entropy() + _normal_cross_entropy(q, mean, p.variance + mean.pow(2))


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    alpha = ember.where(p.alpha > 2, p.alpha, 3.0)
    mean = alpha * p.scale / (alpha - 1)
    second = alpha * p.scale.pow(2) / (alpha - 2)
    return _where_inf(p.alpha <= 2, -p.entropy() + _normal_cross_entropy(q, mean, second))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    alpha = ember.where(p.alpha > 1, p.alpha, 2.0)
    mean = alpha * p.scale / (alpha - 1)
    result = -p.entropy() - q.rate.log() + q.rate * mean
    return _where_inf(p.alpha <= 1, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = -p.entropy() - q.rate.log() + q.rate * p.mean
    return _where_inf(p.low < 0, result)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    # -E[log q] = -log(α sᵅ) + (α + 1) E[log x], E[log x] over U(a, b) in closed form
    width = p.high - p.low
    expected_log = (ember.xlogy(p.high, p.high) - ember.xlogy(p.low, p.low) - width) / width
    cross = -(q.alpha.log() + q.alpha * q.scale.log()) + (q.alpha + 1) * expected_log
    return _where_inf(p.low < q.scale, -p.entropy() + cross)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    width = p.high - p.low
    exp_moment = (q.scale / width) * (ember.exp(-(p.low - q.loc) / q.scale)
                                      - ember.exp(-(p.high - q.loc) / q.scale))
    return -p.entropy() + _gumbel_cross_entropy(q, p.mean, exp_moment)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    exp_moment = ember.exp(q.loc / q.scale) * p.rate / (p.rate + q.scale.reciprocal())
    return -p.entropy() + _gumbel_cross_entropy(q, p.mean, exp_moment)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    exp_moment = ember.exp(-(p.loc - q.loc) / q.scale + p.scale.pow(2) / (2 * q.scale.pow(2)))
    return -p.entropy() + _gumbel_cross_entropy(q, p.loc, exp_moment)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|x - m| of a normal: σ √(2/π) exp(-d² / 2σ²) + d erf(d / σ√2), d = μ - m
    d = p.loc - q.loc
    abs_moment = (p.scale * math.sqrt(2 / math.pi) * ember.exp(-d.pow(2) / (2 * p.scale.pow(2)))
                  + d * ember.erf(d / (p.scale * math.sqrt(2))))
    return -p.entropy() + (2 * q.scale).log() + abs_moment / q.scale
