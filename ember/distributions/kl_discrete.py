"""KL divergences of the discrete families and of Gamma, Beta and Dirichlet (same-family
closed forms, cross-family pairs as ``-H(p) - E_p[log q]``, and support mismatches, which
are infinite), registered with ``kl.register_kl`` as torch's registry has them."""

from __future__ import annotations

import math

import ember
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.beta import Beta
from ember.distributions.binomial import Binomial
from ember.distributions.categorical import Categorical
from ember.distributions.continuous_bernoulli import ContinuousBernoulli
from ember.distributions.dirichlet import Dirichlet
from ember.distributions.exponential import Exponential
from ember.distributions.gamma import Gamma
from ember.distributions.geometric import Geometric
from ember.distributions.gumbel import Gumbel
from ember.distributions.kl import register_kl
from ember.distributions.laplace import Laplace
from ember.distributions.normal import Normal
from ember.distributions.one_hot_categorical import OneHotCategorical
from ember.distributions.pareto import Pareto
from ember.distributions.poisson import Poisson
from ember.distributions.uniform import Uniform
from ember.distributions.utils import euler_constant
from ember.nn.functional import softplus

__all__: list[str] = []

_INF = math.inf


def _x_log_x(x):
    return ember.xlogy(x, x)


def _beta_mean_log(p):
    """E[log x] under Beta ``p``."""
    return ember.digamma(p.concentration1) - ember.digamma(p.concentration1 + p.concentration0)


# -- the same family ------------------------------------------------------------------------------
@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # log(p/q) = softplus(-q.logits) - softplus(-p.logits); likewise for the failures
    heads = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    heads = ember.where(p.probs == 0, 0.0, ember.where(q.probs == 0, _INF, heads))
    tails = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    tails = ember.where(p.probs == 1, 0.0, ember.where(q.probs == 1, _INF, tails))
    return heads + tails


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    terms = p.probs * (p.logits - q.logits)
    terms = ember.where((q.probs == 0).expand_as(terms), _INF, terms)
    terms = ember.where((p.probs == 0).expand_as(terms), 0.0, terms)
    return terms.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count "
                                  "is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return ember.where(p.total_count > q.total_count, _INF, kl)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    pc, qc = p.concentration, q.concentration
    return (qc * (p.rate / q.rate).log() + ember.lgamma(qc) - ember.lgamma(pc)
            + (pc - qc) * ember.digamma(pc) + (q.rate - p.rate) * (pc / p.rate))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    p1, p0, q1, q0 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    p_sum, q_sum = p1 + p0, q1 + q0
    log_beta_ratio = (q1.lgamma() + q0.lgamma() + p_sum.lgamma()
                      - p1.lgamma() - p0.lgamma() - q_sum.lgamma())
    return (log_beta_ratio + (p1 - q1) * ember.digamma(p1) + (p0 - q0) * ember.digamma(p0)
            + (q_sum - p_sum) * ember.digamma(p_sum))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    pc, qc = p.concentration, q.concentration
    p_sum, q_sum = pc.sum(-1), qc.sum(-1)
    mean_log = pc.digamma() - p_sum.digamma().unsqueeze(-1)  # E_p[log x_i]
    return (p_sum.lgamma() - q_sum.lgamma() - (pc.lgamma() - qc.lgamma()).sum(-1)
            + ((pc - qc) * mean_log).sum(-1))


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    # log p(x) = x logit(p) + log(1 - p) + log C(p)
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + ember.log1p(-p.probs)
            - q._cont_bern_log_norm() - ember.log1p(-q.probs))


# -- across families ------------------------------------------------------------------------------
def _continuous_bernoulli_cross_entropy(q, mean):
    """-E_p[log q(x)] for a continuous Bernoulli ``q`` from ``mean = E_p[x]``."""
    return -(mean * q.logits + ember.log1p(-q.probs) + q._cont_bern_log_norm())


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() + _continuous_bernoulli_cross_entropy(q, p.mean)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    expected_square = p.variance + p.mean.pow(2) - 2 * q.loc * p.mean + q.loc.pow(2)
    return (-p.entropy() + q.scale.log() + 0.5 * math.log(2 * math.pi)
            + expected_square / (2 * q.scale.pow(2)))


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # torch's test is inclusive: a uniform that starts at 0 or ends at 1 counts as a mismatch
    return ember.where((q.low >= 0) | (q.high <= 1), _INF, result)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    qc = q.concentration
    return (-p.entropy() + qc.lgamma() - qc * q.rate.log() - (qc - 1) * _beta_mean_log(p)
            + q.rate * p.mean)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    total = p.concentration1 + p.concentration0
    second_moment = p.concentration1 * (p.concentration1 + 1) / (total * (total + 1))
    variance = q.scale.pow(2)
    expected_square = second_moment - 2 * q.loc * p.mean + q.loc.pow(2)
    return (-p.entropy() + 0.5 * (variance * (2 * math.pi)).log()
            + 0.5 * expected_square / variance)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return ember.where((q.low > 0) | (q.high < 1), _INF, result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    qc = q.concentration
    return (-qc * ratio.log() + ratio + qc.lgamma() + qc * euler_constant
            - (1 + euler_constant))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    pc = p.concentration
    scale_ratio = q.scale * p.rate
    loc_ratio = q.loc / q.scale
    neg_entropy = (pc - 1) * pc.digamma() - pc.lgamma() - pc
    # E_p[exp(-(x - loc) / scale)] is a gamma moment generating function
    exp_moment = ember.exp(loc_ratio) * (1 + scale_ratio.reciprocal()).pow(-pc)
    return neg_entropy + scale_ratio.log() + pc / scale_ratio + exp_moment - loc_ratio


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    pc = p.concentration
    variance = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    t1 = 0.5 * (rate_sq * variance * (2 * math.pi)).log() - pc - pc.lgamma()
    expected_square = (0.5 * (pc.pow(2) + pc) / rate_sq - q.loc * pc / p.rate
                       + 0.5 * q.loc.pow(2))
    return t1 + (pc - 1) * pc.digamma() + expected_square / variance


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    qc = q.concentration
    mean_log = p.scale.log() + p.alpha.reciprocal()  # E_p[log x]
    result = (p.alpha.log() - mean_log + qc.lgamma() - qc * q.rate.log()
              + (1 - qc) * mean_log + q.rate * p.alpha * p.scale / (p.alpha - 1) - 1)
    return ember.where(p.alpha <= 1, _INF, result)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    q1, q0 = q.concentration1, q.concentration0
    t1 = width.log()
    t2 = (q1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = q1.lgamma() + q0.lgamma() - (q1 + q0).lgamma()
    return ember.where((p.high > 1) | (p.low < 0), _INF, t3 + t4 - t1 - t2)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    qc = q.concentration
    t2 = qc.lgamma() - qc * q.rate.log()
    t3 = (1 - qc) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    return ember.where(p.low < 0, _INF, -width.log() + t2 + t3 + t4)


def _infinity(p, q):
    return ember.full_like(p.mean, _INF)


def _poisson_infinity(p, q):
    return ember.full_like(p.rate, _INF)


for _p, _q in [(Normal, Beta), (Normal, Gamma), (Laplace, Beta), (Laplace, Gamma),
               (Gumbel, Beta), (Gumbel, Gamma), (Exponential, Beta), (Gamma, Beta),
               (Gamma, Pareto), (Gamma, Uniform), (Pareto, Beta), (Beta, Pareto),
               (Normal, ContinuousBernoulli), (Laplace, ContinuousBernoulli),
               (Gumbel, ContinuousBernoulli), (Exponential, ContinuousBernoulli),
               (Gamma, ContinuousBernoulli), (Pareto, ContinuousBernoulli)]:
    register_kl(_p, _q)(_infinity)
for _q in (Bernoulli, Binomial):
    register_kl(Poisson, _q)(_poisson_infinity)
